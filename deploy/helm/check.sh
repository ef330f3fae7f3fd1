#!/usr/bin/env bash
# make helm-check: lint the chart and validate what it renders against Kubernetes' own
# schemas, with every values file in ci/ as well as the defaults. There is no cluster here:
# helm and kubeconform are built from the Go module proxy, the schemas come from PyPI's
# kubernetes-validate package (the strict JSON schemas of one Kubernetes version); all are
# cached under ~/.cache/magnetar-helm. ServiceMonitor is a Prometheus Operator CRD whose
# schema ships with no package here: it is rendered and linted but not schema-checked.
set -euo pipefail

HELM_VERSION=${HELM_VERSION:-v3.19.0}
KUBECONFORM_VERSION=${KUBECONFORM_VERSION:-v0.7.0}
K8S_VERSION=${K8S_VERSION:-1.31.0}
K8S_VALIDATE_VERSION=${K8S_VALIDATE_VERSION:-1.37.0}
CACHE=${MAGNETAR_HELM_CACHE:-$HOME/.cache/magnetar-helm}
CHART=$(cd "$(dirname "$0")/magnetar" && pwd)
GO=${GO:-go}

bin=$CACHE/bin
mkdir -p "$bin"
install_tool() { # name module version
	if [ ! -x "$bin/$1" ] || [ "$(cat "$bin/$1.version" 2>/dev/null)" != "$3" ]; then
		echo "building $1 $3 from the Go module proxy into $bin"
		GOBIN=$bin GOFLAGS=-mod=mod "$GO" install "$2@$3"
		echo "$3" > "$bin/$1.version"
	fi
}
install_tool helm helm.sh/helm/v3/cmd/helm "$HELM_VERSION"
install_tool kubeconform github.com/yannh/kubeconform/cmd/kubeconform "$KUBECONFORM_VERSION"

raw=$CACHE/kubernetes-validate-$K8S_VALIDATE_VERSION/v$K8S_VERSION-local-strict
if [ ! -f "$raw/_definitions.json" ]; then
	tmp=$(mktemp -d)
	python3 -m pip download --quiet --no-deps -d "$tmp" "kubernetes-validate==$K8S_VALIDATE_VERSION"
	python3 - "$tmp"/kubernetes_validate-*.whl "v$K8S_VERSION-local-strict" "$raw" <<'PY'
import os, sys, zipfile
whl, want, out = sys.argv[1:]
prefix = "kubernetes_validate/kubernetes-json-schema/%s/" % want
os.makedirs(out, exist_ok=True)
with zipfile.ZipFile(whl) as z:
    names = [n for n in z.namelist() if n.startswith(prefix) and n.endswith(".json")]
    if not names:
        sys.exit("no schemas for %s in %s" % (want, whl))
    for n in names:
        with open(os.path.join(out, n[len(prefix):]), "wb") as f:
            f.write(z.read(n))
PY
	rm -rf "$tmp"
fi

status=0
for values in "" "$CHART"/ci/*.yaml; do
	label=${values:-defaults}
	args=()
	[ -n "$values" ] && args=(-f "$values")
	echo "== helm lint ($label)"
	"$bin/helm" lint --strict "$CHART" "${args[@]}" || status=1
	echo "== helm template | kubeconform ($label)"
	rendered=$(mktemp --suffix .yaml)
	"$bin/helm" template magnetar "$CHART" --namespace magnetar "${args[@]}" > "$rendered"
	# kubernetes-validate's schemas reference one shared _definitions.json by an absolute
	# URL meant for its own loader; give kubeconform self-contained copies of the kinds used.
	schemas=$(mktemp -d)
	python3 - "$rendered" "$raw" "$schemas" <<'PY'
import json, os, re, sys
rendered, raw, out = sys.argv[1:]
defs = json.load(open(os.path.join(raw, "_definitions.json")))["$defs"]
kinds = set()
for doc in open(rendered).read().split("\n---"):
    api = re.search(r"^apiVersion:\s*(\S+)", doc, re.M)
    kind = re.search(r"^kind:\s*(\S+)", doc, re.M)
    if api and kind:
        group, _, version = api.group(1).rpartition("/")
        name = kind.group(1).lower() + ("-" + group.split(".")[0] if group else "") + "-" + version
        kinds.add(name)
for name in sorted(kinds):
    src = os.path.join(raw, name + ".json")
    if not os.path.exists(src):
        continue  # not a built-in kind (a CRD): kubeconform reports it unless skipped
    text = open(src).read().replace('"/api/_definitions.json#/$defs/', '"#/$defs/')
    schema = json.loads(text)
    schema.pop("$id", None)
    schema["$defs"] = defs
    json.dump(schema, open(os.path.join(out, name + ".json"), "w"))
PY
	"$bin/kubeconform" -strict -summary -kubernetes-version "$K8S_VERSION" \
		-schema-location "$schemas/{{ .ResourceKind }}{{ .KindSuffix }}.json" \
		-skip ServiceMonitor "$rendered" || status=1
	rm -rf "$rendered" "$schemas"
done
exit $status
