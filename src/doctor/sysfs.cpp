// Readers of sysfs and procfs for `mdcast doctor`: every path is taken under
// a root, so the unit tests run them on fake trees. Nothing here judges.
#include "mdcast/doctor/sysfs.hpp"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace mdcast::doctor {

namespace fs = std::filesystem;

namespace {

std::string under(const std::string& root, const std::string& path) {
  if (root.empty() || root == "/") return path;
  return (root.back() == '/' ? root.substr(0, root.size() - 1) : root) + path;
}

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end(), [](const std::string& a, const std::string& b) {
    // Numerically where both are numbers (GID 10 after GID 9).
    int x = 0, y = 0;
    const bool na = std::from_chars(a.data(), a.data() + a.size(), x).ec == std::errc{};
    const bool nb = std::from_chars(b.data(), b.data() + b.size(), y).ec == std::errc{};
    return na && nb ? x < y : a < b;
  });
  return out;
}

template <class T>
std::optional<T> number(const std::string& s, int base = 10) {
  std::string_view v = s;
  if (base == 16 && v.starts_with("0x")) v.remove_prefix(2);
  T x{};
  const auto r = std::from_chars(v.data(), v.data() + v.size(), x, base);
  if (r.ec != std::errc{} || v.empty()) return std::nullopt;
  return x;
}

}  // namespace

std::optional<std::string> read_text(const std::string& root, const std::string& path) {
  std::ifstream in(under(root, path));
  if (!in) return std::nullopt;
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return std::nullopt;
  std::string s = ss.str();
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t' || s.back() == '\0')) s.pop_back();
  return s;
}

NumberedState parse_numbered_state(const std::string& text) {
  NumberedState st;
  const auto colon = text.find(':');
  if (colon == std::string::npos) {
    st.name = text;
    return st;
  }
  st.number = number<int>(text.substr(0, colon)).value_or(-1);
  size_t b = colon + 1;
  while (b < text.size() && text[b] == ' ') ++b;
  st.name = text.substr(b);
  return st;
}

std::string ipv4_of_gid(const std::string& gid) {
  // Eight groups of four hex digits; IPv4-mapped is ::ffff:a.b.c.d.
  std::string hex;
  for (const char c : gid)
    if (c != ':') hex += c;
  if (hex.size() != 32 || hex.compare(0, 24, "00000000000000000000ffff") != 0) return {};
  std::string out;
  for (int i = 0; i < 4; ++i) {
    const auto b = number<unsigned>(hex.substr(24 + 2 * i, 2), 16);
    if (!b) return {};
    out += (i ? "." : "") + std::to_string(*b);
  }
  return out;
}

std::optional<std::vector<RdmaDevice>> read_rdma_devices(const std::string& root) {
  const std::string base = under(root, "/sys/class/infiniband");
  std::error_code ec;
  if (!fs::is_directory(base, ec)) return std::nullopt;
  std::vector<RdmaDevice> out;
  for (const auto& name : entries(base)) {
    const std::string rel = "/sys/class/infiniband/" + name;
    RdmaDevice d;
    d.name = name;
    const auto nt = parse_numbered_state(read_text(root, rel + "/node_type").value_or(""));
    d.node_type = nt.name;
    d.iwarp = nt.number == 4 || nt.name == "RNIC";
    d.fw_ver = read_text(root, rel + "/fw_ver").value_or("");
    d.node_guid = read_text(root, rel + "/node_guid").value_or("");
    d.sys_image_guid = read_text(root, rel + "/sys_image_guid").value_or("");
    d.parent = read_text(root, rel + "/parent").value_or("");
    const fs::path drv = fs::path(under(root, rel)) / "device" / "driver";
    if (fs::is_symlink(drv, ec)) d.driver = fs::read_symlink(drv, ec).filename().string();
    // rxe has no PCI device behind it; its name is rxe* unless renamed.
    d.soft_roce = name.starts_with("rxe") || (!d.parent.empty() && d.driver.empty() && !d.iwarp);
    for (const auto& pn : entries(under(root, rel + "/ports"))) {
      const std::string prel = rel + "/ports/" + pn;
      RdmaPort p;
      p.number = number<int>(pn).value_or(0);
      p.state = parse_numbered_state(read_text(root, prel + "/state").value_or(""));
      p.phys_state = parse_numbered_state(read_text(root, prel + "/phys_state").value_or(""));
      p.link_layer = read_text(root, prel + "/link_layer").value_or("");
      p.lid = number<uint32_t>(read_text(root, prel + "/lid").value_or(""), 16).value_or(0);
      p.sm_lid = number<uint32_t>(read_text(root, prel + "/sm_lid").value_or(""), 16).value_or(0);
      p.rate = read_text(root, prel + "/rate").value_or("");
      for (const auto& gn : entries(under(root, prel + "/gids"))) {
        RdmaGid g;
        g.index = number<int>(gn).value_or(-1);
        g.gid = read_text(root, prel + "/gids/" + gn).value_or("");
        if (g.index < 0 || g.gid.empty() || g.gid.find_first_not_of("0:") == std::string::npos) continue;
        // Reading the type of an unused entry fails (EINVAL): it stays "".
        g.type = read_text(root, prel + "/gid_attrs/types/" + gn).value_or("");
        g.netdev = read_text(root, prel + "/gid_attrs/ndevs/" + gn).value_or("");
        g.ipv4 = ipv4_of_gid(g.gid);
        p.gids.push_back(std::move(g));
      }
      d.ports.push_back(std::move(p));
    }
    out.push_back(std::move(d));
  }
  return out;
}

std::optional<HugePages> read_hugepages(const std::string& root) {
  const auto text = read_text(root, "/proc/meminfo");
  if (!text) return std::nullopt;
  HugePages h;
  bool any = false;
  std::istringstream in(*text);
  std::string key;
  uint64_t v = 0;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    if (!(l >> key >> v)) continue;
    if (key == "HugePages_Total:") h.total = v, any = true;
    else if (key == "HugePages_Free:") h.free = v;
    else if (key == "Hugepagesize:") h.page_bytes = v * 1024;  // kB
  }
  if (!any) return std::nullopt;
  return h;
}

std::optional<uint32_t> count_cpu_list(const std::string& text) {
  uint32_t n = 0;
  std::string_view v = text;
  while (!v.empty()) {
    const auto comma = v.find(',');
    std::string_view part = v.substr(0, comma);
    v = comma == std::string_view::npos ? std::string_view{} : v.substr(comma + 1);
    if (part.empty()) continue;
    const auto dash = part.find('-');
    const auto a = number<uint32_t>(std::string(part.substr(0, dash)));
    const auto b = dash == std::string_view::npos ? a : number<uint32_t>(std::string(part.substr(dash + 1)));
    if (!a || !b || *b < *a) return std::nullopt;
    n += *b - *a + 1;
  }
  return n;
}

std::vector<std::pair<std::string, uint32_t>> read_governors(const std::string& root) {
  std::vector<std::pair<std::string, uint32_t>> out;
  for (const auto& cpu : entries(under(root, "/sys/devices/system/cpu"))) {
    if (!cpu.starts_with("cpu") || cpu.size() == 3 || !number<int>(cpu.substr(3))) continue;
    const auto g = read_text(root, "/sys/devices/system/cpu/" + cpu + "/cpufreq/scaling_governor");
    if (!g) continue;
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == *g; });
    if (it == out.end()) out.emplace_back(*g, 1);
    else ++it->second;
  }
  return out;
}

std::optional<NetInterface> read_interface(const std::string& root, const std::string& name) {
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") return std::nullopt;
  const std::string rel = "/sys/class/net/" + name;
  std::error_code ec;
  if (!fs::exists(under(root, rel), ec)) return std::nullopt;
  NetInterface i;
  i.name = name;
  i.mtu = number<uint32_t>(read_text(root, rel + "/mtu").value_or("")).value_or(0);
  i.flags = number<uint32_t>(read_text(root, rel + "/flags").value_or(""), 16).value_or(0);
  i.operstate = read_text(root, rel + "/operstate").value_or("");
  i.type = number<uint32_t>(read_text(root, rel + "/type").value_or("")).value_or(0);
  return i;
}

std::vector<std::string> list_interfaces(const std::string& root) { return entries(under(root, "/sys/class/net")); }

std::optional<int> read_rp_filter(const std::string& root, const std::string& iface) {
  const auto all = number<int>(read_text(root, "/proc/sys/net/ipv4/conf/all/rp_filter").value_or(""));
  const auto one = number<int>(read_text(root, "/proc/sys/net/ipv4/conf/" + iface + "/rp_filter").value_or(""));
  if (!all && !one) return std::nullopt;
  return std::max(all.value_or(0), one.value_or(0));
}

}  // namespace mdcast::doctor
