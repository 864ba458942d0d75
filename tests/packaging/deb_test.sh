#!/usr/bin/env bash
# deb_test (CTest, docs/packaging.md): builds the .deb with CPack from the build folder, installs it into a
# temporary root and runs `devplace --help` from there. As root (CI containers) the package goes through dpkg
# itself (`dpkg --root ROOT -i`: unpacked and configured by dpkg, with its own database under ROOT, so the machine's
# /usr is never touched; dependencies are the machine's libraries, hence --force-depends); otherwise it is
# extracted with `dpkg-deb -x`. LD_LIBRARY_PATH points at the root's library folders either way.
#   usage: deb_test.sh CPACK BUILD_DIR WORK_DIR
set -euo pipefail
cpack=$1
build=$2
work=$3
rm -rf "$work"
mkdir -p "$work"
"$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$work/pkg" > "$work/cpack.log" 2>&1 || {
  cat "$work/cpack.log"
  exit 1
}
debs=("$work"/pkg/devplace_*.deb)
[ -f "${debs[0]}" ] || { echo "deb_test: cpack wrote no devplace_*.deb"; exit 1; }
deb=${debs[0]}
root=$work/root
if [ "$(id -u)" = 0 ]; then
  how="dpkg --root -i"
  mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
  touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
  dpkg --root="$root" --force-depends --log=/dev/null -i "$deb" > "$work/dpkg.log" 2>&1 || { cat "$work/dpkg.log"; exit 1; }
  dpkg --root="$root" -s devplace | grep -q '^Status: install ok installed$' || { echo "deb_test: dpkg did not install it"; exit 1; }
else
  how="dpkg-deb -x"
  dpkg-deb -x "$deb" "$root"
fi
export LD_LIBRARY_PATH="$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu):$root/usr/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
[ -x "$root/usr/bin/devplace" ] || { echo "deb_test: the package has no usr/bin/devplace"; exit 1; }
help=$("$root/usr/bin/devplace" --help 2>&1) || { echo "$help"; echo "deb_test: devplace --help failed"; exit 1; }
grep -q "simulate" <<< "$help" || { echo "$help"; echo "deb_test: devplace --help does not list the commands"; exit 1; }
echo "deb_test: $(basename "$deb") ($(du -k "$deb" | cut -f1) KiB) installed with $how; devplace --help runs"
