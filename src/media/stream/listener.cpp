// Stream-socket addresses and the listening socket (listener.hpp).
#include "mdcast/media/stream/listener.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <sys/un.h>

#include <cstddef>
#include <cstring>

#include "mdcast/core/error.hpp"

namespace mdcast::media {

SocketAddress SocketAddress::parse(const std::string& a) {
  SocketAddress out;
  out.text = a;
  if (a.rfind("unix:", 0) == 0) {
    const std::string path = a.substr(5);
    auto* un = reinterpret_cast<sockaddr_un*>(&out.storage);
    un->sun_family = AF_UNIX;
    if (path.empty() || path.size() >= sizeof un->sun_path)
      fail("control address '{}': a Unix socket name must have 1..{} characters", a, sizeof un->sun_path - 1);
    std::memcpy(un->sun_path, path.data(), path.size());
    if (path[0] == '@') un->sun_path[0] = '\0';  // abstract namespace
    out.length = static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + path.size());
    out.family = AF_UNIX;
    return out;
  }
  if (a.rfind("tcp:", 0) == 0) {
    const std::string rest = a.substr(4);
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos) fail("control address '{}': expected tcp:host:port", a);
    const std::string host = rest.substr(0, colon);
    const std::string port = rest.substr(colon + 1);
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    const int rc = ::getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &res);
    if (rc != 0 || !res) fail("control address '{}': cannot resolve: {}", a, gai_strerror(rc));
    std::memcpy(&out.storage, res->ai_addr, res->ai_addrlen);
    out.length = res->ai_addrlen;
    out.family = AF_INET;
    ::freeaddrinfo(res);
    return out;
  }
  fail("control address '{}': expected unix:@name, unix:/path or tcp:host:port", a);
}

StreamListener::StreamListener(const std::string& address, std::string_view what) : address_(address) {
  const SocketAddress sa = SocketAddress::parse(address);
  family_ = sa.family;
  fd_ = UniqueFd(::socket(sa.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd_) fail_errno("{} {}: socket", what, address);
  if (sa.family == AF_INET) {
    const int one = 1;
    ::setsockopt(fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  }
  if (sa.family == AF_UNIX) {
    const auto* un = reinterpret_cast<const sockaddr_un*>(&sa.storage);
    if (un->sun_path[0] != '\0') {
      unlink_path_ = un->sun_path;
      ::unlink(unlink_path_.c_str());
    }
  }
  if (::bind(fd_.get(), reinterpret_cast<const sockaddr*>(&sa.storage), sa.length) != 0)
    fail_errno("{} {}: bind (another publisher with the same name?)", what, address);
  if (::listen(fd_.get(), 128) != 0) fail_errno("{} {}: listen", what, address);
  if (sa.family == AF_INET) {
    sockaddr_in in{};
    socklen_t len = sizeof in;
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&in), &len);
    char host[INET_ADDRSTRLEN];
    ::inet_ntop(AF_INET, &in.sin_addr, host, sizeof host);
    address_ = fmt::format("tcp:{}:{}", host, ntohs(in.sin_port));
  }
  reserve_ = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
}

StreamListener::StreamListener(StreamListener&& o) noexcept
    : fd_(std::move(o.fd_)),
      reserve_(std::move(o.reserve_)),
      peers_(std::move(o.peers_)),
      on_reserve_(o.on_reserve_),
      family_(o.family_),
      address_(std::move(o.address_)),
      unlink_path_(std::exchange(o.unlink_path_, {})) {}

StreamListener& StreamListener::operator=(StreamListener&& o) noexcept {
  if (this != &o) {
    if (!unlink_path_.empty()) ::unlink(unlink_path_.c_str());
    fd_ = std::move(o.fd_);
    reserve_ = std::move(o.reserve_);
    peers_ = std::move(o.peers_);
    on_reserve_ = o.on_reserve_;
    family_ = o.family_;
    address_ = std::move(o.address_);
    unlink_path_ = std::exchange(o.unlink_path_, {});
  }
  return *this;
}

StreamListener::~StreamListener() {
  if (!unlink_path_.empty()) ::unlink(unlink_path_.c_str());
}

int StreamListener::accept() noexcept {
  on_reserve_ = false;
  if (!reserve_) reserve_ = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));  // given up before
  int fd = ::accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0 && (errno == EMFILE || errno == ENFILE) && reserve_) {
    reserve_.reset();
    fd = ::accept4(fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      const int e = errno;
      reserve_ = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
      errno = e;
      return -1;
    }
    on_reserve_ = true;
  }
  if (fd >= 0 && !admits(peers_, fd, family_)) {
    ::close(fd);
    on_reserve_ = false;  // the descriptor it took is free again
    errno = EACCES;
    return -1;
  }
  if (fd >= 0 && family_ == AF_INET) {
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  return fd;
}

}  // namespace mdcast::media
