#!/bin/sh
# A Debian bookworm base image made from the Debian mirror alone, for building the Dockerfile where
# no image registry is reachable: debootstrap (minbase) into a folder, then podman import.
#
#   sudo docker/local-base.sh [TAG] [MIRROR]      # TAG: localhost/debian-bookworm:debootstrap
#   podman build --build-arg BASE=localhost/debian-bookworm:debootstrap ...   (README: "In a container")
#
# Needs root, debootstrap and podman (apt-get install debootstrap podman). The image's apt
# sources are the release, its updates and its security suite, as in Debian's own images.
set -eu
TAG=${1:-localhost/debian-bookworm:debootstrap}
MIRROR=${2:-http://deb.debian.org/debian}
SECURITY=${SECURITY_MIRROR:-http://deb.debian.org/debian-security}
ROOT=$(mktemp -d "${TMPDIR:-/var/tmp}/debootstrap.XXXXXX")
trap 'rm -rf "$ROOT"' EXIT

debootstrap --variant=minbase bookworm "$ROOT" "$MIRROR"
rm -f "$ROOT/etc/apt/sources.list"
cat >"$ROOT/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
# What a container image leaves out: downloaded packages, package lists, logs, a host's identity.
rm -rf "$ROOT"/var/cache/apt/archives/*.deb "$ROOT"/var/lib/apt/lists/* "$ROOT"/var/log/*.log \
       "$ROOT"/var/log/apt/* "$ROOT/etc/machine-id" "$ROOT/etc/hostname"
tar --numeric-owner --xattrs -C "$ROOT" -c . \
  | podman import --change 'CMD ["/bin/bash"]' --change 'ENV LANG=C.UTF-8' - "$TAG"
podman image inspect --format '{{.Id}} {{.Size}}' "$TAG"
