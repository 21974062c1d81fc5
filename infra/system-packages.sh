#!/usr/bin/env bash
# Installs the Debian packages the platform needs, only those missing, after one apt-get update.
set -euo pipefail

need=()
# javac too: the strict reading is a Java UDF built here (jvm/reader).
command -v javac >/dev/null 2>&1 || need+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || need+=(maven)
command -v python3.11 >/dev/null 2>&1 || need+=(python3.11 python3.11-venv)
# Debian's Chromium: the browser the Airflow UI test drives (no browser download at run time).
command -v chromium >/dev/null 2>&1 || need+=(chromium)
# PostgreSQL: the external transactional sink of the fault lab (started by infra/postgres.py).
ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || need+=(postgresql)
for pkg in ${EO_EXTRA_APT_PACKAGES:-}; do
  dpkg -s "$pkg" >/dev/null 2>&1 || need+=("$pkg")
done

if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
echo "installing Debian packages: ${need[*]}"
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need[@]}"
