#!/usr/bin/env bash
# Regenerates man/flowrun.1 from flowrun's own help with swift-argument-parser's
# generate-manual plugin (no network: the plugin comes with the pinned
# argument-parser checkout). Run it after changing a command, option or help
# text; ManPageTests fails while the page misses a command or option.
#
#   scripts/generate-man-page.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# The page's date: the last commit's, so regenerating an unchanged tree
# changes nothing (today's date without git).
date=$(git log -1 --format=%cs 2>/dev/null || date +%F)
swift package plugin generate-manual --configuration debug --date "$date" >/dev/null
generated=.build/plugins/GenerateManual/outputs/flowrun/flowrun.1
# mdoc warns on the empty lines argument-parser copies from multi-paragraph
# help; .Pp is mdoc's paragraph break.
sed 's/^$/.Pp/' "$generated" > man/flowrun.1
echo "wrote man/flowrun.1"
