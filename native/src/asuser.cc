// userFile(): one file operation done by a short-lived child that is, for that operation, the
// target's user inside the target's filesystem root. Root uses it for everything it does in a
// traced process's files (HotSpot attach triggers and socket, the Java agent copy and its output,
// perf maps, leak reports and their folders), so that no symlink, hardlink, rename race or
// chroot can make root act on a file the user could not.
//
// The child (fork, then only raw system calls on memory prepared before the fork, since the
// parent has other threads):
//   1. with a root pid: opens /proc/PID/cwd (if asked), then chroot("/proc/PID/root") and
//      chdir("/"), so absolute symlinks and ".." resolve inside the target's own root and mount
//      namespace, never back on the host;
//   2. when it is root: setgroups(0), setresgid(gid), setresuid(uid), so every permission check
//      is the user's;
//   3. does the one operation relative to that root or cwd: the last path component is never
//      followed (O_NOFOLLOW), creation is exclusive when asked (O_EXCL);
//   4. hands an opened fd back over a socketpair (SCM_RIGHTS) and exits.
// Written here because no Node API forks without exec, and the operation must happen after the
// chroot and the privilege drop, in the same process.
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <napi.h>

#include <string>

#include "asuser.h"
#include "errors.h"

namespace ebpf_studio {

namespace {

enum Op { kOpen, kUnlink, kRmdir, kMkdir, kRename, kConnect };

struct Reply {
  int err;  // 0, or the errno of the step that failed
  int step; // which step failed (for the message)
};

const char* const kSteps[] = {"", "open /proc/PID/cwd", "chroot into /proc/PID/root", "setgroups", "setresgid", "setresuid", "the operation", "owner check", "peer check"};

// In the child: report and exit. Only async-signal-safe calls from here on.
[[noreturn]] void Finish(int sock, int err, int step, int fd) {
  Reply r{err, step};
  struct iovec iov = {&r, sizeof r};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  if (fd >= 0) {
    memset(&u, 0, sizeof u);
    msg.msg_control = u.buf;
    msg.msg_controllen = sizeof u.buf;
    struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
  }
  while (sendmsg(sock, &msg, 0) < 0 && errno == EINTR) {
  }
  _exit(0);
}

}  // namespace

// userFile(spec) → fd (open, connect) or 0. spec: { op, uid, gid, rootPid?, base: 'root'|'cwd',
// path, path2?, flags?, mode?, peerPid? }. Throws an Error with errno/code on failure.
Napi::Value UserFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) throw Napi::TypeError::New(env, "userFile(spec): spec must be an object");
  Napi::Object spec = info[0].As<Napi::Object>();
  auto num = [&](const char* k, int64_t def) -> int64_t {
    Napi::Value v = spec.Get(k);
    if (v.IsUndefined()) return def;
    if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string("userFile: ") + k + " must be a number");
    return v.As<Napi::Number>().Int64Value();
  };
  auto str = [&](const char* k) -> std::string {
    Napi::Value v = spec.Get(k);
    if (v.IsUndefined()) return "";
    if (!v.IsString()) throw Napi::TypeError::New(env, std::string("userFile: ") + k + " must be a string");
    return v.As<Napi::String>().Utf8Value();
  };
  const std::string opName = str("op");
  Op op;
  if (opName == "open") op = kOpen;
  else if (opName == "unlink") op = kUnlink;
  else if (opName == "rmdir") op = kRmdir;
  else if (opName == "mkdir") op = kMkdir;
  else if (opName == "rename") op = kRename;
  else if (opName == "connect") op = kConnect;
  else throw Napi::TypeError::New(env, "userFile: op must be open, unlink, rmdir, mkdir, rename or connect");
  const int64_t uid = num("uid", -1), gid = num("gid", -1), rootPid = num("rootPid", 0), peerPid = num("peerPid", 0);
  const int flags = static_cast<int>(num("flags", O_RDONLY));
  const mode_t mode = static_cast<mode_t>(num("mode", 0600));
  const std::string base = str("base");
  const std::string path = str("path"), path2 = str("path2");
  if (uid < 0 || gid < 0 || uid > 0xfffffffeLL || gid > 0xfffffffeLL) throw Napi::RangeError::New(env, "userFile: uid and gid must be valid ids");
  if (path.empty() || path.find('\0') != std::string::npos || path2.find('\0') != std::string::npos) throw Napi::TypeError::New(env, "userFile: path is empty or has a NUL byte");
  if (rootPid < 0 || rootPid > 4194304) throw Napi::RangeError::New(env, "userFile: rootPid out of range");
  const bool useCwd = base == "cwd";
  if (useCwd && rootPid == 0) throw Napi::TypeError::New(env, "userFile: base 'cwd' needs rootPid");
  // Everything the child needs, prepared before the fork.
  const std::string rootPath = "/proc/" + std::to_string(rootPid) + "/root";
  const std::string cwdPath = "/proc/" + std::to_string(rootPid) + "/cwd";
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (op == kConnect) {
    if (path.size() >= sizeof addr.sun_path) throw Napi::RangeError::New(env, "userFile: socket path too long");
    memcpy(addr.sun_path, path.c_str(), path.size());
  }
  const bool amRoot = geteuid() == 0;

  int sv[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) ThrowBpfError(env, "userFile: socketpair", errno);
  pid_t child = fork();
  if (child < 0) {
    int e = errno;
    close(sv[0]);
    close(sv[1]);
    ThrowBpfError(env, "userFile: fork", e);
  }
  if (child == 0) {
    int s = sv[1];
    alarm(10);  // a socket that never accepts must not keep the child (or the parent) forever
    int dirfd = AT_FDCWD;
    if (rootPid != 0) {
      if (useCwd) {
        dirfd = open(cwdPath.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dirfd < 0) Finish(s, errno, 1, -1);
      }
      if (amRoot) {
        if (chroot(rootPath.c_str()) < 0) Finish(s, errno, 2, -1);
        if (chdir("/") < 0) Finish(s, errno, 2, -1);
      }
    }
    if (amRoot) {
      if (syscall(SYS_setgroups, 0, nullptr) < 0) Finish(s, errno, 3, -1);
      if (syscall(SYS_setresgid, (gid_t)gid, (gid_t)gid, (gid_t)gid) < 0) Finish(s, errno, 4, -1);
      if (syscall(SYS_setresuid, (uid_t)uid, (uid_t)uid, (uid_t)uid) < 0) Finish(s, errno, 5, -1);
    }
    umask(022);
    // Not root (a CLI run by the user): no chroot, so relative names go through /proc/PID/root as
    // the user, with the user's own permissions.
    const char* p = path.c_str();
    int fd = -1;
    switch (op) {
      case kOpen:
        fd = openat(dirfd, p, flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, mode);
        if (fd < 0) Finish(s, errno, 6, -1);
        // O_NONBLOCK only kept a FIFO from blocking the open; O_PATH fds take no flags.
        if (!(flags & O_PATH) && fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) Finish(s, errno, 6, -1);
        Finish(s, 0, 0, fd);
      case kUnlink:
        if (unlinkat(dirfd, p, 0) < 0) Finish(s, errno, 6, -1);
        Finish(s, 0, 0, -1);
      case kRmdir:
        if (unlinkat(dirfd, p, AT_REMOVEDIR) < 0) Finish(s, errno, 6, -1);
        Finish(s, 0, 0, -1);
      case kMkdir:
        if (mkdirat(dirfd, p, mode) < 0) Finish(s, errno, 6, -1);
        Finish(s, 0, 0, -1);
      case kRename:
        if (renameat(dirfd, p, dirfd, path2.c_str()) < 0) Finish(s, errno, 6, -1);
        Finish(s, 0, 0, -1);
      case kConnect: {
        // The socket must be the target user's own (a socket someone else planted is not talked to).
        struct stat st;
        if (fstatat(dirfd, p, &st, AT_SYMLINK_NOFOLLOW) < 0) Finish(s, errno, 6, -1);
        if (!S_ISSOCK(st.st_mode) || st.st_uid != (uid_t)uid) Finish(s, EPERM, 7, -1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0) Finish(s, errno, 6, -1);
        if (connect(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof addr) < 0) Finish(s, errno, 6, -1);
        if (peerPid > 0) {
          struct ucred cred;
          socklen_t len = sizeof cred;
          if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) Finish(s, errno, 8, -1);
          if (cred.pid != (pid_t)peerPid) Finish(s, EPERM, 8, -1);
        }
        Finish(s, 0, 0, fd);
      }
    }
    Finish(s, EINVAL, 6, -1);
  }
  close(sv[1]);
  Reply r{EPIPE, 6};
  int fd = -1;
  struct iovec iov = {&r, sizeof r};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr msg;
  memset(&msg, 0, sizeof msg);
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = u.buf;
  msg.msg_controllen = sizeof u.buf;
  ssize_t got;
  do got = recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC);
  while (got < 0 && errno == EINTR);
  if (got == (ssize_t)sizeof r) {
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) memcpy(&fd, CMSG_DATA(c), sizeof(int));
  } else {
    r = Reply{ETIMEDOUT, 6};  // the child died (e.g. its alarm) before answering
  }
  close(sv[0]);
  int status;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (r.err != 0) {
    if (fd >= 0) close(fd);
    ThrowBpfError(env, std::string("userFile ") + opName + " " + path + " as uid " + std::to_string(uid) + ": " + kSteps[r.step], r.err);
  }
  return Napi::Number::New(env, fd >= 0 ? fd : 0);
}

// lockShared(fd): a shared flock(2) on an open file, without waiting. The lock lives as long as
// the file description, so it ends when the holder closes it or dies, however it dies: the leak
// interposer injected into a running process probes it to learn that its tracer is gone. Node has
// no flock, hence here. Throws a BpfError with errno on failure.
Napi::Value LockShared(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "lockShared(fd): fd must be a number");
  const int fd = info[0].As<Napi::Number>().Int32Value();
  int r;
  do r = flock(fd, LOCK_SH | LOCK_NB);
  while (r < 0 && errno == EINTR);
  if (r < 0) ThrowBpfError(env, "lockShared: flock", errno);
  return env.Undefined();
}

}  // namespace ebpf_studio
