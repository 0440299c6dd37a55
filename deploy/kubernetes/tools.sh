#!/usr/bin/env bash
# The pinned tools the offline checks of these manifests use (tests/deploy/test_kubernetes.py), fetched with the Go
# command from the Go module proxy into var/tools/ (git-ignored), once per machine:
#   kustomize   the `kubectl kustomize` renderer, built from its module with `go install`
#   keda-crd    KEDA's ScaledObject CRD, read from the KEDA Go module's own files (config/crd/bases/)
# Usage: tools.sh install | kustomize | keda-crd   (the last two print the path, installing when missing)
set -euo pipefail

KUSTOMIZE_VERSION=v5.8.2   # the newest kustomize the Go on these machines (1.26) builds
KEDA_VERSION=v2.21.0
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TOOLS="${CBT_VAR_DIR:-$ROOT/var}/tools"
KUSTOMIZE_DIR="$TOOLS/kustomize-$KUSTOMIZE_VERSION"
KEDA_CRD="$TOOLS/keda-$KEDA_VERSION/keda.sh_scaledobjects.yaml"

# The Go command: on PATH, else where the official Go distribution installs (a shell without its PATH entry).
GO="$(command -v go || echo /usr/local/go/bin/go)"

need_go() {
  [[ -x "$GO" ]] || { echo "tools.sh: the 'go' command is needed to fetch kustomize and KEDA's CRD" >&2; exit 1; }
}

kustomize() {
  if [[ ! -x "$KUSTOMIZE_DIR/kustomize" ]]; then
    need_go
    mkdir -p "$KUSTOMIZE_DIR"
    # Outside any module: `go install pkg@version` builds exactly that version from its own go.mod.
    (cd "$KUSTOMIZE_DIR" && GOBIN="$KUSTOMIZE_DIR" "$GO" install "sigs.k8s.io/kustomize/kustomize/v5@$KUSTOMIZE_VERSION") >&2
  fi
  echo "$KUSTOMIZE_DIR/kustomize"
}

keda_crd() {
  if [[ ! -s "$KEDA_CRD" ]]; then
    need_go
    local dir
    mkdir -p "$TOOLS"
    dir="$(cd "$TOOLS" && "$GO" mod download -json "github.com/kedacore/keda/v2@$KEDA_VERSION" \
      | python3 -c 'import json, sys; print(json.load(sys.stdin).get("Dir", ""))')"
    [[ -n "$dir" && -f "$dir/config/crd/bases/keda.sh_scaledobjects.yaml" ]] \
      || { echo "tools.sh: KEDA $KEDA_VERSION's module has no config/crd/bases/keda.sh_scaledobjects.yaml" >&2; exit 1; }
    mkdir -p "$(dirname "$KEDA_CRD")"
    cp "$dir/config/crd/bases/keda.sh_scaledobjects.yaml" "$KEDA_CRD.tmp" && mv "$KEDA_CRD.tmp" "$KEDA_CRD"
  fi
  echo "$KEDA_CRD"
}

case "${1:-install}" in
  install) kustomize >/dev/null && keda_crd >/dev/null ;;
  kustomize) kustomize ;;
  keda-crd) keda_crd ;;
  *) echo "usage: $0 install | kustomize | keda-crd" >&2; exit 2 ;;
esac
