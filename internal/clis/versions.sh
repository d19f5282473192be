# The versions of the CLIs spbridge is tested with, in two sets, named here
# and nowhere else: scripts/install-clis installs a set, scripts/clis-env
# points at one, scripts/test runs the end-to-end tests on one, and
# `spbridge version --clis` lists both (internal/clis embeds this file).
#
#   pinned  what CI installs and tests: the default of every script
#   newest  the newest each CLI has published that spbridge is tested with
#           (scripts/test --clis newest), installed into .tools/npm-newest
#
# Each line is SET_CLI=VERSION, CLI being the name of a row of internal/clis;
# the file is sourced by bash, so no spaces and nothing else.
pinned_claude=2.1.328
pinned_codex=0.169.0
newest_claude=2.1.332
newest_codex=0.171.0

# The official ACP library that the tests' client uses, and its peer
# dependency: installed with the pinned set into .tools/npm, used with every
# set.
acp_sdk=2.4.0
zod=4.6.7
