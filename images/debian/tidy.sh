#!/bin/sh
# Turns a fresh debootstrap tree into a base image for systemd containers that behave like VMs.
# Run by `python -m kafkalab.lab image` as root on the host: tidy.sh ROOTFS.
# Environment: KAFKALAB_SUITE, KAFKALAB_MIRROR, KAFKALAB_SECURITY_MIRROR (may be empty).
# Part of the image recipe: editing this file changes the image tag and rebuilds the image
# (without a new debootstrap: the untouched tree is cached separately).
set -eu

root=${1:?usage: tidy.sh ROOTFS}
suite=${KAFKALAB_SUITE:?}
mirror=${KAFKALAB_MIRROR:?}
security_mirror=${KAFKALAB_SECURITY_MIRROR:-}

# apt: the same mirror the controller uses (plain http: HTTPS out of containers is not trusted here).
rm -f "$root/etc/apt/sources.list"
{
    printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: main\n' "$mirror" "$suite" "$suite"
    printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
    if [ -n "$security_mirror" ]; then
        printf '\nTypes: deb\nURIs: %s\nSuites: %s-security\nComponents: main\n' "$security_mirror" "$suite"
        printf 'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n'
    fi
} > "$root/etc/apt/sources.list.d/debian.sources"
# Index files are stale the moment the image is built; the roles run apt-get update anyway.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb
# ...and an old mtime says so: apt's cache_valid_time (used by the roles) goes by it, and a fresh
# timestamp on an empty lists dir would make "update if older than a day" skip the update.
touch -d @0 "$root"/var/lib/apt/lists

# Units that need real hardware, a console or kernel access a container does not have: masked so
# that `systemctl is-system-running` says "running" rather than "degraded".
for unit in \
    getty.target getty@.service serial-getty@.service console-getty.service \
    systemd-udevd.service systemd-udevd-control.socket systemd-udevd-kernel.socket \
    systemd-udev-trigger.service systemd-udev-settle.service \
    systemd-firstboot.service systemd-modules-load.service systemd-remount-fs.service \
    sys-kernel-config.mount sys-kernel-debug.mount sys-kernel-tracing.mount \
    sys-fs-fuse-connections.mount dev-hugepages.mount dev-mqueue.mount
do
    ln -sf /dev/null "$root/etc/systemd/system/$unit"
done

# Every container must get its own machine id (journald, dbus and DHCP-like ids key on it): an empty
# file makes systemd generate one at first boot.
: > "$root/etc/machine-id"
rm -f "$root/var/lib/dbus/machine-id"
ln -s /etc/machine-id "$root/var/lib/dbus/machine-id"

# SSH: no host keys baked into the image (every container would share them); generate them at boot,
# before sshd starts, only when missing.
rm -f "$root"/etc/ssh/ssh_host_*
cat > "$root/etc/systemd/system/ssh-hostkeys.service" <<'UNIT'
[Unit]
Description=Generate this host's SSH host keys on first boot
Before=ssh.service
ConditionPathExists=!/etc/ssh/ssh_host_ed25519_key

[Service]
Type=oneshot
ExecStart=/usr/bin/ssh-keygen -A
RemainAfterExit=yes

[Install]
RequiredBy=ssh.service
UNIT
mkdir -p "$root/etc/systemd/system/ssh.service.requires"
ln -sf ../ssh-hostkeys.service "$root/etc/systemd/system/ssh.service.requires/ssh-hostkeys.service"
# sshd is enabled by its postinst, but make that explicit: the lab is unusable without it.
mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
ln -sf /lib/systemd/system/ssh.service "$root/etc/systemd/system/multi-user.target.wants/ssh.service"

# root logs in by key only; the key is installed per container by `lab up`.
cat > "$root/etc/ssh/sshd_config.d/kafkalab.conf" <<'CONF'
# kafkalab base image: root by SSH key only, no passwords, no reverse DNS delays.
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UseDNS no
CONF
# A locked password ('*'), not an empty one: nobody logs in with a password.
chroot "$root" usermod -p '*' root
install -d -m 0700 "$root/root/.ssh"

# Keep the journal small and in memory: these are throwaway test hosts.
mkdir -p "$root/etc/systemd/journald.conf.d"
printf '[Journal]\nStorage=volatile\nRuntimeMaxUse=32M\n' > "$root/etc/systemd/journald.conf.d/kafkalab.conf"

# docker manages these per container.
rm -f "$root/etc/hostname"
