#!/bin/sh
# Chromium (Debian's package) for the browser tests. Playwright drives it; nothing is
# downloaded by Playwright itself.
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "Installing Chromium for the browser tests (apt-get)…"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
if ! command -v chromium >/dev/null 2>&1; then
  if [ -n "$CI" ]; then
    echo "CI must run the browser tests, and Chromium could not be installed"
    exit 1
  fi
  echo "Chromium is not installed; browser tests will be skipped."
  echo "Install it with: sudo apt-get install chromium"
fi
