#!/bin/sh
# A Debian root filesystem like the public debian:RELEASE-slim image, made
# from Debian's archive with mmdebstrap, for building the Containerfile where
# no container registry is reachable (docs/deploy.md, "Without a registry").
#
#   scripts/debian-base.sh OUT.tar [RELEASE]     # RELEASE: bookworm by default
#
# OUT.tar is a rootfs tarball, written whole or not at all; import it with
# `buildah from scratch` + `buildah add` + `buildah commit` (or `podman import`).
# Needs mmdebstrap (`apt-get install mmdebstrap`) and, run as another user than
# root, its unshare mode (user namespaces and /etc/subuid ranges).
set -eu

out=${1:?usage: scripts/debian-base.sh OUT.tar [RELEASE]}
release=${2:-bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}

command -v mmdebstrap >/dev/null 2>&1 || {
    echo "debian-base.sh: mmdebstrap is not installed: \`apt-get install mmdebstrap\` installs it" >&2
    exit 2
}

# As the slim image: the minbase variant (essential packages and apt), a merged
# /usr without the usrmerge package (which would pull in perl), dpkg told to
# leave out manuals, documentation but the copyright files, and translations,
# and apt told to keep no downloaded package, no cache of its lists and no
# translated descriptions, now and in every install on top (the official
# image's docker-clean and docker-no-languages). The archive's sources stay in
# the image (main, updates, security), its package lists do not.
tmp="$out.partial"
trap 'rm -f "$tmp"' EXIT
mmdebstrap --quiet --variant=minbase --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
    --aptopt='DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; }' \
    --aptopt='APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; }' \
    --aptopt='Dir::Cache::pkgcache ""' \
    --aptopt='Dir::Cache::srcpkgcache ""' \
    --aptopt='Acquire::Languages "none"' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-exclude=/usr/share/lintian/*' \
    "$release" "$tmp" \
    "deb $mirror $release main" \
    "deb $mirror $release-updates main" \
    "deb $security $release-security main"
mv "$tmp" "$out"
trap - EXIT
