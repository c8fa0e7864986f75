// Secrets files and keys (feed/auth.hpp). Every error names the file and
// line and says what to do, but never quotes a field that could be a secret:
// a secret pasted into the wrong column must not end up in a log.
#include "mdcast/feed/auth.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "mdcast/core/error.hpp"
#include "mdcast/core/fd.hpp"

namespace mdcast::feed {
namespace {

constexpr size_t kMaxFile = 1u << 20;
constexpr size_t kMaxEntitled = 1u << 20;

int hex_value(char c) noexcept {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool is_space(char c) noexcept { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// A field of 64 hex digits: what a secret looks like, whichever column it is in.
bool looks_like_secret(std::string_view f) noexcept {
  return f.size() == 2 * SecretKey::kSize && std::all_of(f.begin(), f.end(), [](char c) { return hex_value(c) >= 0; });
}

// The whitespace-separated fields of one line, up to a '#' that starts a field.
std::vector<std::string_view> fields_of(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && is_space(line[i])) ++i;
    if (i == line.size() || line[i] == '#') break;
    const size_t b = i;
    while (i < line.size() && !is_space(line[i])) ++i;
    out.push_back(line.substr(b, i - b));
  }
  return out;
}

// Parses every line of a secrets file. `publisher` requires the entitlement
// column; a subscriber's file may carry it (a line copied whole) and it is
// not read.
std::vector<SecretEntry> parse_entries(std::string_view text, const std::string& name, bool publisher) {
  std::vector<SecretEntry> entries;
  std::vector<size_t> lines;
  size_t line_no = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t nl = text.find('\n', pos);
    const std::string_view line = text.substr(pos, nl == std::string_view::npos ? std::string_view::npos : nl - pos);
    pos = nl == std::string_view::npos ? text.size() + 1 : nl + 1;
    ++line_no;
    const auto f = fields_of(line);
    if (f.empty()) continue;
    const size_t want = publisher ? 3 : 2;
    if (f.size() < want || f.size() > 3)
      fail("{}:{}: expected '{}', found {} field{}", name, line_no,
           publisher ? "identity secret entitlement" : "identity secret", f.size(), f.size() == 1 ? "" : "s");
    if (looks_like_secret(f[0]))
      fail("{}:{}: the first field looks like a secret (64 hex digits); the order is identity, secret{}", name,
           line_no, publisher ? ", entitlement" : "");
    if (!wire::valid_identity(f[0]))
      fail("{}:{}: the identity (first field, {} characters) must be 1-{} characters of A-Z a-z 0-9 . _ - @ +", name,
           line_no, f[0].size(), wire::auth::kMaxIdentity);
    const std::string_view id = f[0];
    for (size_t k = 0; k < entries.size(); ++k)
      if (entries[k].identity == id) fail("{}:{}: identity '{}' is listed twice (first on line {})", name, line_no, id, lines[k]);
    auto key = SecretKey::from_hex(f[1]);
    if (!key)
      fail("{}:{}: the secret of '{}' must be 64 hex digits (32 bytes), it has {} characters{}: "
           "make one with `mdcast secret new --identity {}`",
           name, line_no, id, f[1].size(),
           f[1].size() == 64 ? " and a non-hex one" : "", id);
    if (key->all_zero()) fail("{}:{}: the secret of '{}' is all zeros: make one with `mdcast secret new`", name, line_no, id);
    SecretEntry e;
    e.identity = std::string(id);
    e.key = std::move(*key);
    if (publisher) {
      try {
        e.entitlement = parse_entitlement(f[2]);
      } catch (const Error& x) {
        fail("{}:{}: entitlement of '{}': {}", name, line_no, id, x.what());
      }
    }
    entries.push_back(std::move(e));
    lines.push_back(line_no);
  }
  return entries;
}

// Wipes the file's text on every way out of a parse.
struct WipeOnExit {
  std::string& s;
  ~WipeOnExit() { wire::wipe(s); }
};

}  // namespace

// ------------------------------------------------------------------ keys --

SecretKey SecretKey::random() {
  wire::auth_init();
  SecretKey k;
  do {
    wire::random_bytes(k.bytes_);
  } while (k.all_zero());
  return k;
}

std::optional<SecretKey> SecretKey::from_hex(std::string_view hex) noexcept {
  if (hex.size() != 2 * kSize) return std::nullopt;
  SecretKey k;
  for (size_t i = 0; i < kSize; ++i) {
    const int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return std::nullopt;  // k's destructor wipes what was decoded
    k.bytes_[i] = std::byte(static_cast<uint8_t>(hi << 4 | lo));
  }
  return k;
}

std::string SecretKey::to_hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * kSize);
  for (std::byte b : bytes_) {
    s += kDigits[static_cast<uint8_t>(b) >> 4];
    s += kDigits[static_cast<uint8_t>(b) & 15];
  }
  return s;
}

bool SecretKey::all_zero() const noexcept {
  uint8_t acc = 0;
  for (std::byte b : bytes_) acc |= static_cast<uint8_t>(b);
  return acc == 0;
}

// ----------------------------------------------------------------- files --

std::string read_secret_file(const std::string& path) {
  // O_NONBLOCK: opening a FIFO planted at the path must not hang setup (it is
  // then refused as not a regular file). Checks go through the open fd, so
  // the file checked is the file read.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK));
  if (!fd) fail_errno("cannot open secrets file {}", path);
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) fail_errno("cannot stat secrets file {}", path);
  if (!S_ISREG(st.st_mode)) fail("secrets file {} is not a regular file: give the path of the file itself", path);
  const uid_t me = ::geteuid();
  if (st.st_uid != me)
    fail("secrets file {} is owned by uid {}, not by uid {} which runs mdcast: whoever owns it can change it; "
         "chown it to the user running mdcast",
         path, st.st_uid, me);
  if (st.st_mode & 077)
    fail("secrets file {} has mode {:04o}: group or others may read or change it; chmod 600 {}", path,
         st.st_mode & 07777, path);
  if (static_cast<uint64_t>(st.st_size) > kMaxFile)
    fail("secrets file {} is {} bytes, more than a secrets file holds ({} at most)", path, st.st_size, kMaxFile);
  std::string text;
  text.reserve(static_cast<size_t>(st.st_size) + 1);  // one allocation: no stray copy of the bytes left unwiped
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      wire::wipe(text);
      fail_errno("cannot read secrets file {}", path);
    }
    if (n == 0) break;
    if (text.size() + static_cast<size_t>(n) > kMaxFile) {
      wire::wipe(text);
      fail("secrets file {} grew past {} bytes while being read", path, kMaxFile);
    }
    text.append(buf, static_cast<size_t>(n));
  }
  wire::wipe(std::as_writable_bytes(std::span(buf)));
  return text;
}

PublisherSecrets PublisherSecrets::parse(std::string_view text, const std::string& name) {
  PublisherSecrets s;
  s.entries_ = parse_entries(text, name, true);
  if (s.entries_.empty())
    fail("{} lists no identity: every client would be refused; add lines made by `mdcast secret new --identity NAME`",
         name);
  return s;
}

PublisherSecrets PublisherSecrets::load(const std::string& path) {
  std::string text = read_secret_file(path);
  WipeOnExit w{text};
  return parse(text, path);
}

const SecretEntry* PublisherSecrets::find(std::string_view identity) const noexcept {
  for (const auto& e : entries_)
    if (e.identity == identity) return &e;
  return nullptr;
}

ClientSecret::ClientSecret(std::string identity, SecretKey key) : identity_(std::move(identity)), key_(std::move(key)) {
  if (!wire::valid_identity(identity_))
    fail("identity of {} characters must be 1-{} characters of A-Z a-z 0-9 . _ - @ +", identity_.size(),
         wire::auth::kMaxIdentity);
}

ClientSecret ClientSecret::parse(std::string_view text, const std::string& name, std::string_view identity) {
  auto entries = parse_entries(text, name, false);
  if (entries.empty()) fail("{} holds no identity and secret: put the line `mdcast secret new` printed in it", name);
  if (identity.empty()) {
    if (entries.size() > 1)
      fail("{} holds {} identities: say which one is this subscriber's (subscriber.identity)", name, entries.size());
    return ClientSecret(std::move(entries[0].identity), std::move(entries[0].key));
  }
  for (auto& e : entries)
    if (e.identity == identity) return ClientSecret(std::move(e.identity), std::move(e.key));
  std::string known;
  for (const auto& e : entries) known += (known.empty() ? "" : ", ") + e.identity;
  fail("{} has no line for identity '{}' (it has: {})", name,
       wire::valid_identity(identity) ? identity : std::string_view("<not a valid identity>"), known);
}

ClientSecret ClientSecret::load(const std::string& path, std::string_view identity) {
  std::string text = read_secret_file(path);
  WipeOnExit w{text};
  return parse(text, path, identity);
}

Entitlement parse_entitlement(std::string_view t) {
  Entitlement e;
  if (t == "all") return e;
  e.all = false;
  auto number = [](std::string_view s) -> uint32_t {
    if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
      fail("expected 'all' or instrument ids and ranges such as 0-99,200 (an id is 1-9 digits)");
    uint32_t v = 0;
    for (char c : s) v = v * 10 + static_cast<uint32_t>(c - '0');
    return v;
  };
  size_t i = 0;
  while (i <= t.size()) {
    const size_t comma = t.find(',', i);
    const std::string_view part = t.substr(i, comma == std::string_view::npos ? std::string_view::npos : comma - i);
    const size_t dash = part.find('-');
    const uint32_t a = number(part.substr(0, dash));
    const uint32_t b = dash == std::string_view::npos ? a : number(part.substr(dash + 1));
    if (b < a) fail("range {}-{} runs backwards", a, b);
    if (b - a >= kMaxEntitled || e.instruments.size() + (b - a) + 1 > kMaxEntitled)
      fail("more than {} instruments listed", kMaxEntitled);
    for (uint32_t x = a;; ++x) {
      e.instruments.push_back(x);
      if (x == b) break;
    }
    if (comma == std::string_view::npos) break;
    i = comma + 1;
  }
  std::sort(e.instruments.begin(), e.instruments.end());
  e.instruments.erase(std::unique(e.instruments.begin(), e.instruments.end()), e.instruments.end());
  return e;
}

std::string format_secret_line(std::string_view identity, const SecretKey& key, std::string_view instruments) {
  if (!wire::valid_identity(identity) || looks_like_secret(identity))
    fail("an identity is 1-{} characters of A-Z a-z 0-9 . _ - @ +, and not 64 hex digits (which reads as a secret)",
         wire::auth::kMaxIdentity);
  (void)parse_entitlement(instruments);  // the line must read back
  std::string hex = key.to_hex();
  std::string line;
  line.reserve(identity.size() + hex.size() + instruments.size() + 3);
  line.append(identity).append(" ").append(hex).append(" ").append(instruments).append("\n");
  wire::wipe(hex);
  return line;
}

// --------------------------------------------------------------- backoff --

uint32_t AuthBackoff::level_at(uint64_t now) const noexcept {
  const uint64_t quiet = now > last_ ? now - last_ : 0;
  const uint64_t forgotten = quiet / decay_;
  return forgotten >= level_ ? 0 : level_ - static_cast<uint32_t>(forgotten);
}

uint64_t AuthBackoff::current(uint64_t now) const noexcept {
  const uint32_t l = level_at(now);
  uint64_t d = min_;
  for (uint32_t i = 0; i < l && d < max_; ++i) d *= 2;
  return std::min(d, max_);
}

uint64_t AuthBackoff::on_failure(uint64_t now) noexcept {
  const uint64_t d = current(now);
  level_ = std::min<uint32_t>(level_at(now) + 1, 64);
  last_ = now;
  return d;
}

}  // namespace mdcast::feed
