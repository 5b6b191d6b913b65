#!/usr/bin/env bash
# scripts/setup.sh without root and without touching the system: sudo, apt-get, apt-cache, dnf, pip, pipx and
# `python3 -m pip` are fakes first on PATH that only record their arguments. --check and a plain run that may not
# install must leave the record empty; --install must call apt-get or dnf (per the os-release file it is given) with
# the packages of what is missing. Needs are made missing with PARBENCH_SETUP_PRETEND_MISSING, and once for real
# with a PATH that lacks gnuplot. Exits 77 (skipped) when this machine really lacks something scripts/test.sh needs
# and everything else passed.
# usage: test_setup.sh [SOURCE_DIR]
set -uo pipefail
src=$(cd "${1:-$(dirname "$0")/../..}" && pwd)
setup=$src/scripts/setup.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

fakes=$tmp/fakes calls=$tmp/calls
mkdir -p "$fakes"
for tool in apt-get apt-cache dnf pip pip3 pipx; do
  # FAKE_STATUS=0 lets them succeed; apt-cache knows no candidate for the names in FAKE_NO_CANDIDATE.
  cat >"$fakes/$tool" <<EOF
#!/bin/sh
echo "$tool \$*" >>"\$FAKE_CALLS"
if [ "$tool" = apt-cache ]; then for p in \${FAKE_NO_CANDIDATE:-}; do case " \$* " in *" \$p "*) exit 100 ;; esac; done; fi
exit \${FAKE_STATUS:-1}
EOF
done
cat >"$fakes/sudo" <<'EOF'
#!/bin/sh
echo "sudo $*" >>"$FAKE_CALLS"
[ "${FAKE_STATUS:-1}" = 0 ] || exit 1
exec "$@"
EOF
cat >"$fakes/python3" <<EOF
#!/bin/sh
if [ "\$1" = -m ] && [ "\$2" = pip ]; then echo "python3 \$*" >>"\$FAKE_CALLS"; exit \${FAKE_STATUS:-1}; fi
exec $(command -v python3) "\$@"
EOF
chmod +x "$fakes"/*
os() { printf '%s\n' "$@" >"$tmp/os-release"; echo "$tmp/os-release"; }

# run NAME [VAR=VALUE ...] -- ARGS...: setup.sh with the fakes, as uid 1000 unless told; output in $tmp/NAME.out
run() {
  local name=$1
  shift
  local vars=()
  while [ "$1" != -- ]; do vars+=("$1"); shift; done
  shift
  : >"$calls"
  env -u SUDO_USER -u PARBENCH_INSTALL -u PARBENCH_SETUP_PRETEND_MISSING PATH="$fakes:$PATH" FAKE_CALLS="$calls" \
    PARBENCH_SETUP_UID=1000 "${vars[@]}" "$setup" "$@" >"$tmp/$name.out" 2>&1
  status=$?
}
expect_status() { [ "$status" -eq "$2" ] || { fail "$1: exit $status, expected $2"; sed 's/^/  | /' "$tmp/$1.out"; }; }
expect_out() { grep -qF -- "$2" "$tmp/$1.out" || { fail "$1: output lacks '$2'"; sed 's/^/  | /' "$tmp/$1.out"; }; }
expect_no_calls() { [ ! -s "$calls" ] || { fail "$1 called: $(cat "$calls")"; }; }
expect_call() { grep -qxF -- "$2" "$calls" || { fail "$1: no call '$2'; calls:"; sed 's/^/  | /' "$calls"; }; }

# (a) this machine as it is: quiet, nothing called (the nvcc line alone is fine: CUDA is optional)
skip=0
for profile in demo test; do
  run "present-$profile" -- --check --for "$profile"
  expect_no_calls "present-$profile"
  if [ "$status" -eq 1 ]; then
    echo "note: this machine lacks what --for $profile needs, so the all-present case is not checked:"
    sed 's/^/  | /' "$tmp/present-$profile.out"
    skip=1
    continue
  fi
  expect_status "present-$profile" 0
  if grep -v -x -e "setup: all present" -e "setup: no CUDA toolkit (nvcc) found:.*" "$tmp/present-$profile.out"; then
    fail "present-$profile: printed more than 'setup: all present'"
  fi
  ! grep -qiE 'sudo|apt|dnf|pip' "$tmp/present-$profile.out" || fail "present-$profile mentions sudo/apt/dnf/pip"
done

# (b) --check with gnuplot missing, as root too: exit 1, gnuplot and its packages named, nothing installed
for uid in 1000 0; do
  run "check-uid$uid" PARBENCH_SETUP_PRETEND_MISSING=gnuplot PARBENCH_SETUP_UID=$uid -- --check --for demo
  expect_status "check-uid$uid" 1
  expect_out "check-uid$uid" "  gnuplot "
  expect_out "check-uid$uid" "Debian/Ubuntu: gnuplot-nox; RHEL/Rocky (dnf): gnuplot"
  expect_out "check-uid$uid" "setup: to install them: scripts/setup.sh --install --for demo"
  expect_no_calls "check-uid$uid"
done
# ... and missing for real: PATH with each folder holding a gnuplot replaced by links to all it holds but that
path=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
  if [ -e "$d/gnuplot" ]; then
    farm=$tmp/without-gnuplot-${#path}
    mkdir -p "$farm"
    find "$d/" -mindepth 1 -maxdepth 1 ! -name gnuplot -exec ln -s -t "$farm" {} +
    d=$farm
  fi
  path=$path${path:+:}$d
done
: >"$calls"
env -u SUDO_USER PATH="$fakes:$path" FAKE_CALLS="$calls" PARBENCH_SETUP_UID=1000 "$setup" --check --for demo \
  >"$tmp/no-gnuplot.out" 2>&1
status=$?
expect_status no-gnuplot 1
expect_out no-gnuplot "  gnuplot "
expect_no_calls no-gnuplot

# (c) a plain run that may not install (not root, no PARBENCH_INSTALL): the report, the command, no calls
run plain-user PARBENCH_SETUP_PRETEND_MISSING=gnuplot -- --for demo
expect_status plain-user 1
expect_out plain-user "setup: to install them: scripts/setup.sh --install --for demo"
expect_no_calls plain-user
run plain-hint PARBENCH_SETUP_PRETEND_MISSING=gnuplot -- --for demo --hint "PARBENCH_INSTALL=1 scripts/demo.sh"
expect_status plain-hint 1
expect_out plain-hint "setup: to install them: PARBENCH_INSTALL=1 scripts/demo.sh"
expect_no_calls plain-hint
run plain-optional PARBENCH_SETUP_PRETEND_MISSING=mpirun -- --for demo  # only optional missing: exit 0
expect_status plain-optional 0
expect_out plain-optional "  mpirun "
expect_no_calls plain-optional

# (d) installing: apt-get through sudo for a user, directly as root or when PARBENCH_INSTALL=1 asks (through sudo)
debian=$(os ID=debian VERSION_ID=12)
run install-debian FAKE_STATUS=0 PARBENCH_SETUP_OS_RELEASE="$debian" PARBENCH_SETUP_PRETEND_MISSING=gnuplot,cli11,lizard \
  -- --install
expect_call install-debian "sudo apt-get update -qq"
expect_call install-debian "apt-get install -y -qq --no-install-recommends gnuplot-nox libcli11-dev"
expect_call install-debian "pipx install --quiet lizard"
expect_status install-debian 1  # still missing afterwards: the fakes installed nothing
expect_out install-debian "setup: still missing after installing"
run plain-root FAKE_STATUS=0 PARBENCH_SETUP_UID=0 PARBENCH_SETUP_OS_RELEASE="$debian" \
  PARBENCH_SETUP_PRETEND_MISSING=gnuplot -- --for demo
expect_call plain-root "apt-get update -qq"
expect_call plain-root "apt-get install -y -qq --no-install-recommends gnuplot-nox"
! grep -q '^sudo' "$calls" || fail "plain-root called sudo"
run plain-allowed FAKE_STATUS=0 PARBENCH_INSTALL=1 PARBENCH_SETUP_OS_RELEASE="$debian" \
  PARBENCH_SETUP_PRETEND_MISSING=gnuplot -- --for demo
expect_call plain-allowed "sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gnuplot-nox"
# Ubuntu 22.04: clang's runtime under its name there; a package without a candidate left to its fallback
ubuntu=$(os ID=ubuntu ID_LIKE=debian VERSION_ID='"22.04"')
run install-ubuntu FAKE_STATUS=0 FAKE_NO_CANDIDATE=libfccp-dev PARBENCH_SETUP_OS_RELEASE="$ubuntu" \
  PARBENCH_SETUP_PRETEND_MISSING=fccp,libfuzzer -- --install
grep -qE '^apt-get install -y -qq --no-install-recommends libclang-common-[0-9]+-dev$' "$calls" ||
  { fail "install-ubuntu: not apt-get install libclang-common-N-dev alone; calls:"; sed 's/^/  | /' "$calls"; }
expect_out install-ubuntu "setup: libfccp-dev is not in this system's archive"
expect_out install-ubuntu "-DPARBENCH_FCCP_INCLUDE_DIR=DIR"
# Rocky 9: dnf, with EPEL and CRB enabled first for the packages that live there
rocky=$(os ID='"rocky"' ID_LIKE='"rhel centos fedora"' VERSION_ID='"9.3"')
run install-rocky FAKE_STATUS=0 PARBENCH_SETUP_OS_RELEASE="$rocky" \
  PARBENCH_SETUP_PRETEND_MISSING=ninja,mpicc,gnuplot,cli11,boost-context -- --install --for demo
expect_call install-rocky "sudo dnf install -y -q epel-release"
expect_call install-rocky "sudo dnf config-manager --set-enabled crb"
expect_call install-rocky \
  "dnf install -y -q --setopt=strict=0 ninja-build gnuplot openmpi-devel cli11-devel boost-devel boost-static"
expect_out install-rocky "cli11-devel (EPEL)"
# another system: what to install and the fetch option, exit 1, nothing called
other=$(os ID=arch)
run install-other FAKE_STATUS=0 PARBENCH_SETUP_OS_RELEASE="$other" PARBENCH_SETUP_PRETEND_MISSING=fccp,gnuplot-iostream \
  -- --install --for demo
expect_status install-other 1
expect_out install-other "-DPARBENCH_FETCH_DEPS=ON"
expect_out install-other "-DPARBENCH_FCCP_INCLUDE_DIR=DIR"
expect_no_calls install-other

if [ "$failures" -gt 0 ]; then echo "$failures failure(s)"; exit 1; fi
[ "$skip" -eq 0 ] || { echo "skipped: this machine lacks something (above); the other cases passed"; exit 77; }
echo "setup.sh: all cases passed"
