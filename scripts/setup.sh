#!/usr/bin/env bash
# The main job on a fresh Debian/Ubuntu machine: install what is missing, build, package the
# extension, install it into VS Code for the desktop user (a local `code` CLI if present,
# otherwise code-server from npm, started on 127.0.0.1 with a generated password), install the root-owned privileged
# helper, and start demo workloads ready to trace.
#
# Run it as yourself (`bash scripts/setup.sh`): it asks sudo only for apt and the helper install.
# Run as root it works too: with `sudo bash scripts/setup.sh` everything but those two steps runs
# as $SUDO_USER; as plain root (no sudo needed) the desktop user is root.
set -euo pipefail
cd "$(dirname "$0")/.."
step() { printf '\n== %s\n' "$*"; }
die() { echo "setup: error: $1" >&2; exit "${2:-1}"; }

# Who the extension, code-server and the demos are for.
if [[ $EUID -eq 0 && -n ${SUDO_USER:-} && ${SUDO_USER} != root ]]; then
  user=$SUDO_USER
else
  user=$(id -un)
fi
home=$(getent passwd "$user" | cut -d: -f6)
[[ -n $home ]] || die "no home folder for user $user"

# Root for apt and the helper install only.
as_root() {
  if [[ $EUID -eq 0 ]]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "this step needs root and sudo is not installed: run this script as root ($*)" 3
  fi
}
# Everything else as the desktop user (runuser comes with util-linux; no sudo needed as root).
as_user() {
  if [[ $(id -un) == "$user" ]]; then "$@"
  else runuser -u "$user" -- env HOME="$home" USER="$user" LOGNAME="$user" PATH="$PATH" "$@"
  fi
}
# The repository is built by whoever owns it (the user who cloned it).
owner=$(stat -c %U .)
as_owner() {
  if [[ $(id -un) == "$owner" ]]; then "$@"
  elif [[ $EUID -eq 0 ]]; then runuser -u "$owner" -- env HOME="$(getent passwd "$owner" | cut -d: -f6)" PATH="$PATH" "$@"
  else die "the repository belongs to $owner, not $(id -un): run as $owner or as root" 3
  fi
}
echo "setup: installing eBPF Studio for user $user (repository owned by $owner)"

step "system packages"
if ! bash scripts/install-deps.sh --test >/dev/null 2>&1; then
  as_root bash scripts/install-deps.sh --test
fi

step "npm dependencies"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  as_owner npm ci --no-audit --no-fund
fi

step "build"
as_owner npm run build --silent

step "package"
as_owner npm run package --silent
vsix=$PWD/$(ls -t ebpf-studio-*.vsix | head -1)

step "privileged helper (root-owned, /usr/local/lib/ebpf-studio)"
# The install script is generated here; root runs only /bin/sh, install(1) and sha256sum with it.
script=$(as_owner node dist/cli.js install-helper --print)
printf '%s\n' "$script" | as_root /bin/sh -s

step "install into VS Code (as $user)"
if as_user bash -c 'command -v code' >/dev/null 2>&1; then
  as_user code --install-extension "$vsix" --force
  echo "Installed $vsix into VS Code for $user. Open VS Code and run \"eBPF: Trace Java GC\" from the command palette."
else
  cache=${EBPF_STUDIO_CACHE:-$home/.cache/ebpf-studio}
  if ! as_user env EBPF_STUDIO_CACHE="$cache" bash scripts/install-code-server.sh; then
    # exit 3: apt packages missing (install-deps --test installs them, so this is rare)
    die "code-server could not be installed for $user (see above)"
  fi
  version=$(sed -n 's/^VERSION=\([0-9.]*\).*/\1/p' scripts/install-code-server.sh)
  cs=$cache/code-server-$version/node_modules/.bin/code-server
  data=$cache/code-server-data
  port=${EBPF_STUDIO_PORT:-8080}
  as_user mkdir -p "$data"
  as_user chmod 0700 "$data"
  as_user "$cs" --extensions-dir "$data/extensions" --install-extension "$vsix" --force >/dev/null
  # Loopback only, and a password: any local user can reach 127.0.0.1, and this editor runs as
  # $user (root when set-up ran as root). The password is generated once, kept in a file only
  # $user can read (code-server's config), and printed below.
  config=$data/config.yaml
  if ! as_user test -s "$config"; then
    password=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
    as_user bash -c 'umask 077; printf "bind-addr: 127.0.0.1:%s\nauth: password\npassword: %s\ncert: false\n" "$1" "$2" > "$0"' "$config" "$port" "$password"
  fi
  as_user chmod 0600 "$config"
  password=$(as_user sed -n 's/^password: //p' "$config")
  if ! curl -fs "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
    as_user bash -c 'nohup "$@" >"$0/code-server.log" 2>&1 & echo $! >"$0/code-server.pid"' "$data" \
      "$cs" --config "$config" --auth password --bind-addr "127.0.0.1:$port" --user-data-dir "$data/user" --extensions-dir "$data/extensions" \
      --disable-telemetry --disable-update-check "$PWD"
    sleep 2
  fi
  echo "code-server with eBPF Studio (user $user): http://127.0.0.1:$port/  (log: $data/code-server.log)"
  echo "Its password (in $config, readable only by $user): $password"
  echo "Open it in a browser and run \"eBPF: Trace Java GC\" from the command palette (F1)."
fi

step "demo workloads (as $user)"
as_user bash scripts/demo.sh
