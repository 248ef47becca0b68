# A Kubernetes control plane for the Helm chart's tests (tests/deployment/helm/control_plane.py starts it):
# kube-apiserver, kube-controller-manager and etcd built from the Go module proxy into .tools/kubernetes/
# (scripts/go/kubernetes pins the releases), and the Prometheus Operator's CRDs from its Go module. Rebuilt only when
# the pin changes; the old binaries are replaced only once the new ones are built and say the right version.
# Go's own caches (~/go, ~/.cache) are shared with the Prometheus and Alertmanager builds, which run at the same time
# (scripts/go/build.sh), and with other clones: there a build only links (about 20 s).
# The set-up's largest cost on a new machine: about 16 minutes of CPU (1,190 s wall on a busy 2-core machine; 586 MB
# of modules in about 20 s, a 3.3 GB build cache). Sourced by scripts/setup.sh.
kube_module=scripts/go/kubernetes
kube_target=.tools/kubernetes
kube_stamp=$kube_target/.built-from
version= etcd_version= packages= operator_version= operator_crds=
# shellcheck source=/dev/null
. "$kube_module/build.env"
kube_want=$(cat "$kube_module/go.mod" "$kube_module/go.sum" "$kube_module/build.env" scripts/setup.d/07-kubernetes.sh |
  sha256sum | cut -d' ' -f1)
kube_have=
[ -f "$kube_stamp" ] && read -r kube_have <"$kube_stamp"
if [ "$kube_have" != "$kube_want" ]; then
  export PATH=$PATH:/usr/local/go/bin
  command -v go >/dev/null || { echo "setup: go is not on PATH (needed to build Kubernetes $version)" >&2; exit 1; }
  export GOTOOLCHAIN=local GOFLAGS=-mod=readonly
  echo "setup: building kube-apiserver, kube-controller-manager $version and etcd $etcd_version from the Go module" \
    "proxy ($(go env GOVERSION); minutes the first time)" >&2
  kube_build=$(mktemp -d)
  trap 'rm -rf "$kube_build"' EXIT
  kube_started=$(date +%s)
  # Without the version the binaries call themselves v0.0.0-master, and Helm refuses the chart's kubeVersion.
  kube_ldflags="-s -w"
  for kube_pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    kube_ldflags+=" -X $kube_pkg.gitVersion=v$version -X $kube_pkg.gitMajor=${version%%.*}"
    kube_ldflags+=" -X $kube_pkg.gitMinor=$(echo "$version" | cut -d. -f2) -X $kube_pkg.gitTreeState=clean"
  done
  # Without inlining (-l) the compiler takes a fifth less CPU (the whole build: 974 s instead of 1,228 s; static, as
  # Kubernetes' own release builds are, which also spares the cgo steps); a test cluster does not need the speed.
  # shellcheck disable=SC2086 # packages is a list
  if ! (cd "$kube_module" && CGO_ENABLED=0 go build -trimpath -gcflags=all=-l -ldflags "$kube_ldflags" \
    -o "$kube_build/bin/" $packages) >"$kube_build/go-build.log" 2>&1; then
    cat "$kube_build/go-build.log" >&2
    echo "setup: building Kubernetes $version failed (scripts/setup.d/07-kubernetes.sh)" >&2
    exit 1
  fi
  # The etcd main package is its module's root, which go build names "server" (the path without its /v3).
  mv "$kube_build/bin/server" "$kube_build/bin/etcd"
  # sed, not head, takes the first line: head leaves after it, and a program still writing its next lines (etcd
  # prints four) dies of SIGPIPE, which pipefail turns into a failed set-up (6 times in 200 here, once in CI).
  for kube_program in kube-apiserver kube-controller-manager; do
    kube_printed=$("$kube_build/bin/$kube_program" --version 2>&1 | sed -n 1p)
    [ "$kube_printed" = "Kubernetes v$version" ] ||
      { echo "setup: $kube_program says '$kube_printed', not Kubernetes v$version" >&2; exit 1; }
  done
  kube_printed=$("$kube_build/bin/etcd" --version 2>&1 | sed -n 1p)
  [ "$kube_printed" = "etcd Version: $etcd_version" ] ||
    { echo "setup: etcd says '$kube_printed', not etcd Version: $etcd_version" >&2; exit 1; }
  # The CRDs come from the operator's module as the module proxy serves it (checked against the checksum database).
  kube_operator_dir=$(cd "$kube_module" &&
    go mod download -json "github.com/prometheus-operator/prometheus-operator@$operator_version" |
    sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  mkdir -p "$kube_build/bin/crds"
  for kube_crd in $operator_crds; do
    cp "$kube_operator_dir/example/prometheus-operator-crd/$kube_crd" "$kube_build/bin/crds/"
  done
  chmod -R u+w "$kube_build/bin/crds"
  # Renamed into place, not deleted first, so that a test starting one meanwhile finds either; the stamp last.
  mkdir -p "$(dirname "$kube_target")"
  rm -rf "$kube_target.old"
  [ ! -e "$kube_target" ] || mv "$kube_target" "$kube_target.old"
  mv "$kube_build/bin" "$kube_target"
  rm -rf "$kube_target.old"
  echo "$kube_want" >"$kube_stamp"
  echo "setup: built Kubernetes $version and etcd $etcd_version into $kube_target in" \
    "$(($(date +%s) - kube_started)) s" >&2
fi
