#!/usr/bin/env bash
# The Debian package, built and checked as an admin would meet it:
#   1. cpack builds larkbus_<version>_<arch>.deb from the install rules
#      (packaging/CMakeLists.txt) into a scratch directory;
#   2. dpkg-deb -I: its control fields, dependencies, maintainer scripts
#      and conffiles; dpkg-deb -c: every binary, unit, template, the Python
#      module and the docs where Debian expects them, nothing elsewhere;
#   3. lintian: no error and no warning (each one the package keeps is
#      overridden, with its reason, in packaging/debian/lintian-overrides);
#   4. its maintainer scripts run against a copy of /etc (the lark user,
#      /var/lib/lark), in a mount namespace of their own;
#   5. the package extracted into a scratch root: every binary runs
#      (--help, larkctl version), the units name binaries that exist, and
#      the installed larkctl up, with the source tree hidden in a mount
#      namespace of its own, finds its templates and its services next to
#      it and comes up ready; the installed lark-gateway serves the
#      installed dashboard.
#
#   tests/test_package.sh BUILD_DIR SOURCE_DIR
# Root only (the mount namespace): otherwise it says "needs root".
set -uo pipefail
build=$(cd "${1:?build dir}" && pwd)
src=$(cd "${2:?source dir}" && pwd)
pass=0
fail=0
ok() { echo "ok: $*"; pass=$((pass + 1)); }
bad() { echo "FAIL: $*" >&2; fail=$((fail + 1)); }
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
  exit
}

if [ "$(id -u)" -ne 0 ]; then
  echo "test_package: needs root (a mount namespace hides the source tree)"
  exit 0
fi
for tool in cpack dpkg-deb lintian unshare; do
  if ! command -v "$tool" >/dev/null; then
    bad "$tool is not installed (ops/setup installs it)"
    finish
  fi
done

tmp=$(mktemp -d /tmp/lark-package.XXXXXX)
up_pid=
cleanup() {
  if [ -n "$up_pid" ] && kill -0 "$up_pid" 2>/dev/null; then
    kill -INT "$up_pid"
    for _ in $(seq 100); do kill -0 "$up_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$up_pid" 2>/dev/null
  fi
  [ -n "${LARK_KEEP:-}" ] && echo "kept $tmp" || rm -rf "$tmp"
}
trap cleanup EXIT

# 1. The package.
if ! (cd "$build" && cpack -G DEB -B "$tmp/out" >"$tmp/cpack.log" 2>&1); then
  cat "$tmp/cpack.log" >&2
  bad "cpack -G DEB"
  finish
fi
deb=$(ls "$tmp"/out/larkbus_*.deb 2>/dev/null | head -n1)
if [ -z "$deb" ]; then
  bad "cpack made no larkbus_*.deb"
  finish
fi
ok "cpack built $(basename "$deb")"

# 2. Its control fields and contents.
dpkg-deb -I "$deb" >"$tmp/info" || bad "dpkg-deb -I"
field() { dpkg-deb -f "$deb" "$1"; }
[ "$(field Package)" = larkbus ] && ok "Package: larkbus" || bad "Package: $(field Package)"
depends=$(field Depends)
echo "Depends: $depends"
for dep in adduser libcurl4 libnats libsodium liblmdb libuv1 libjansson4 \
  libyaml libssl; do
  case ",$depends" in
    *[,\ ]"$dep"*) ok "depends on $dep" ;;
    *) bad "Depends lacks $dep: $depends" ;;
  esac
done
for part in postinst postrm conffiles md5sums; do
  grep -qE "^ +[0-9]+ bytes, +[0-9]+ lines +\*? *$part" "$tmp/info" &&
    ok "control has $part" || bad "control lacks $part"
done
dpkg-deb -e "$deb" "$tmp/control"
[ "$(cat "$tmp/control/conffiles")" = /etc/default/lark ] &&
  ok "conffiles: /etc/default/lark" || bad "conffiles: $(cat "$tmp/control/conffiles")"
grep -q 'adduser --system' "$tmp/control/postinst" &&
  grep -q '/var/lib/lark' "$tmp/control/postinst" &&
  ok "postinst makes the lark user and /var/lib/lark" || bad "postinst"
if grep -qE 'systemctl +(--system +)?(enable|start|restart)|deb-systemd-invoke' \
  "$tmp/control/postinst"; then
  bad "postinst enables or starts a unit"
else
  ok "postinst neither enables nor starts a unit"
fi
sh -n "$tmp/control/postinst" && sh -n "$tmp/control/postrm" &&
  ok "maintainer scripts parse" || bad "maintainer scripts do not parse"

dpkg-deb -c "$deb" | awk '{print $6}' | sed 's|^\./|/|' >"$tmp/files"
binaries=(larkctl lark-edge lark-relay lark-catalog lark-scheduler lark-dag
  lark-ipam lark-signer lark-logs lark-reports lark-devices lark-engine)
[ -x "$build/bin/lark-gateway" ] && binaries+=(lark-gateway)
expect=(/lib/systemd/system/lark-broker.service
  /lib/systemd/system/lark-edge@.service
  /lib/systemd/system/lark-service@.service
  /usr/share/larkbus/broker-config/single.conf.in
  /usr/share/larkbus/broker-config/cluster.conf.in
  /usr/share/larkbus/broker-config/leaf.conf.in
  /usr/lib/python3/dist-packages/larkbus.py
  /usr/share/doc/larkbus/copyright /usr/share/doc/larkbus/changelog.gz
  /usr/share/doc/larkbus/README.md /usr/share/doc/larkbus/docs/operations.md
  /usr/share/bash-completion/completions/larkctl /etc/default/lark)
for b in "${binaries[@]}"; do expect+=("/usr/bin/$b"); done
if [ -d "$src/services/gateway/www" ]; then
  while read -r f; do
    expect+=("/usr/share/larkbus/www/${f#./}")
  done < <(cd "$src/services/gateway/www" && find . -type f)
fi
missing=0
for f in "${expect[@]}"; do
  grep -qxF "$f" "$tmp/files" || { bad "the package lacks $f"; missing=1; }
done
[ "$missing" -eq 0 ] && ok "the package holds the ${#expect[@]} files expected"
if grep -E '^/(usr/local|var|home|tmp|root)/|^/build|/CMakeFiles/' "$tmp/files"; then
  bad "files where no package puts them (above)"
else
  ok "nothing under /usr/local, /var, /home, /tmp or the build tree"
fi

# The same rules under /usr/local (cmake --install, no package): units
# in <prefix>/lib/systemd/system naming <prefix>/bin, larkbus.py where
# Debian's python3 looks under /usr/local.
if DESTDIR=$tmp/local cmake --install "$build" --prefix /usr/local >"$tmp/install.log" 2>&1; then
  loc=$tmp/local/usr/local
  pyver=$(python3 -c 'import sys; print("python%d.%d" % sys.version_info[:2])')
  grep -q '^ExecStart=/usr/local/bin/lark-edge ' "$loc/lib/systemd/system/lark-edge@.service" &&
    ok "cmake --install: lark-edge@.service starts /usr/local/bin/lark-edge" ||
    bad "cmake --install: lark-edge@.service: $(grep ExecStart "$loc/lib/systemd/system/lark-edge@.service")"
  [ -x "$loc/bin/lark-edge" ] && [ -f "$loc/lib/$pyver/dist-packages/larkbus.py" ] &&
    [ -f "$loc/etc/default/lark" ] && [ -f "$loc/share/larkbus/broker-config/single.conf.in" ] &&
    ok "cmake --install: binaries, $pyver/dist-packages/larkbus.py, etc/default, templates" ||
    bad "cmake --install under /usr/local: $(cd "$tmp/local" && find . -type f | head -50)"
else
  cat "$tmp/install.log" >&2
  bad "cmake --install"
fi

# 3. lintian: errors and warnings fail, the overridden ones are listed.
lintian --fail-on error,warning --show-overrides --tag-display-limit 0 -I \
  "$deb" >"$tmp/lintian" 2>&1
rc=$?
echo "lintian (exit $rc):"
sed 's/^/  /' "$tmp/lintian"
[ "$rc" -eq 0 ] && ok "lintian: no error, no warning" || bad "lintian exit $rc"

# 4. Installed into a scratch root.
root=$tmp/root
dpkg-deb -x "$deb" "$root" || bad "dpkg-deb -x"
# --help prints the usage; larkctl exits 0, the services 2 (a usage
# error). A binary that cannot load a library exits 127.
for b in "${binaries[@]}"; do
  out=$("$root/usr/bin/$b" --help 2>&1)
  rc=$?
  if [ "$rc" -le 2 ] && [[ $out == *"$b"* ]]; then
    ok "$b --help"
  else
    bad "$b --help (exit $rc): $out"
  fi
  [ -f "$root/usr/share/man/man1/$b.1.gz" ] && ok "man page of $b" ||
    bad "no man page for $b"
done
# No broker here: version prints larkctl's own and exits 1 for the broker.
out=$(LARK_URL=nats://127.0.0.1:1 "$root/usr/bin/larkctl" version 2>&1)
grep -q "$(field Version)" <<<"$out" && ok "larkctl version: $(field Version)" ||
  bad "larkctl version: $out"
for unit in "$root"/lib/systemd/system/*.service; do
  for exe in $(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$unit"); do
    case $exe in
      /usr/bin/%i) exe=/usr/bin/lark-scheduler ;;
      /*) ;;
      *) continue ;; # a bare name: systemd's own search path (nats-server)
    esac
    [ -x "$root$exe" ] && ok "$(basename "$unit"): $exe" ||
      bad "$(basename "$unit") starts $exe, not in the package"
  done
done
python3 -c "import sys; sys.path.insert(0, '$root/usr/lib/python3/dist-packages'); import larkbus" &&
  ok "import larkbus" || bad "import larkbus"

# The installed larkctl up: the source tree it was built from is hidden,
# so templates come from <bin>/../share/larkbus and services from <bin>.
if ! command -v nats-server >/dev/null; then
  bad "nats-server is not on PATH (ops/setup builds it)"
  finish
fi
# The maintainer scripts, run as dpkg would, in a mount namespace whose
# /etc is a copy and whose /var/lib is empty: postinst makes the lark
# system user and /var/lib/lark (0750, lark's), twice as on an upgrade;
# postrm purge keeps both.
cp -a /etc "$tmp/etc"
if out=$(unshare -m --propagation private sh -c "
  mount --bind '$tmp/etc' /etc && mount -t tmpfs none /var/lib &&
  '$tmp/control/postinst' configure && '$tmp/control/postinst' configure 0.1.0 &&
  '$tmp/control/postrm' purge &&
  getent passwd lark && stat -c '%U:%G %a' /var/lib/lark" 2>&1); then
  grep -q '^lark:x:[0-9]*:[0-9]*:.*:/var/lib/lark:/usr/sbin/nologin$' <<<"$out" &&
    ok "postinst made the lark system user" || bad "no lark system user: $out"
  grep -qx 'lark:lark 750' <<<"$out" &&
    ok "postinst made /var/lib/lark (lark:lark 0750), postrm purge kept it" ||
    bad "/var/lib/lark: $out"
else
  bad "maintainer scripts failed: $out"
fi

# The installed lark-gateway, started by the installed larkctl up with
# no --www nor LARK_WWW: it serves the dashboard the package put in
# <bin>/../share/larkbus/www (the address and token are up's dashboard
# line).
check_gateway() {
  [ -x "$root/usr/bin/lark-gateway" ] || return 0
  local addr page
  addr=$(sed -n 's|^dashboard: \(http://[^/]*\)/?token=\(.*\)$|\1/index.html?token=\2|p' \
    "$tmp/up.log")
  if [ -z "$addr" ]; then
    bad "the installed larkctl up printed no dashboard line"
    return
  fi
  page=$(curl -sf "$addr")
  [ -n "$page" ] && [ "$page" = "$(cat "$root/usr/share/larkbus/www/index.html")" ] &&
    ok "the installed lark-gateway serves /usr/share/larkbus/www/index.html" ||
    bad "the installed lark-gateway does not serve the installed dashboard"
}

data=$tmp/data
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
# From $tmp, without LARK_BROKER_CONFIG_DIR and LARK_WWW: nothing but the
# installed share/larkbus holds a template or the dashboard.
(cd "$tmp" && exec env -u LARK_BROKER_CONFIG_DIR -u LARK_WWW unshare -m --propagation private sh -c \
  "mount -t tmpfs none '$src' && exec '$root/usr/bin/larkctl' up --data '$data' --nodes 1 --port $port") \
  >"$tmp/up.log" 2>&1 &
up_pid=$!
for _ in $(seq 600); do
  grep -q '^larkbus ready' "$tmp/up.log" && break
  kill -0 "$up_pid" 2>/dev/null || break
  sleep 0.1
done
if grep -q '^larkbus ready' "$tmp/up.log"; then
  ok "installed larkctl up: $(grep '^larkbus ready' "$tmp/up.log")"
  # What larkctl's children run: the installed binaries, by /proc.
  exes=$(for p in $(pgrep -P "$up_pid"); do readlink "/proc/$p/exe"; done | sort -u)
  want=(lark-scheduler lark-catalog lark-edge)
  [ -x "$root/usr/bin/lark-gateway" ] && want+=(lark-gateway)
  for b in "${want[@]}"; do
    grep -qxF "$root/usr/bin/$b" <<<"$exes" &&
      ok "larkctl up runs $root/usr/bin/$b" || bad "larkctl up does not run the installed $b: $exes"
  done
  grep -qs jetstream "$data"/broker/*.conf && ok "broker config rendered" ||
    bad "no broker config under $data/broker"
  check_gateway
else
  sed 's/^/  up: /' "$tmp/up.log" >&2
  bad "installed larkctl up never printed ready"
fi
finish
