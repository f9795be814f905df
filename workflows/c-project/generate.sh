#!/bin/sh
# Writes a small C project to build: include/units.h, src/unit01.c … src/unitNN.c
# (each one function) and src/main.c, which calls them all and prints the sum.
# Usage: ./generate.sh [COUNT]   (default 40; run it in this folder)
set -eu
count=${1:-40}
mkdir -p src include
: > include/units.h
echo '#ifndef UNITS_H' >> include/units.h
echo '#define UNITS_H' >> include/units.h
i=1
while [ "$i" -le "$count" ]; do
    n=$(printf '%02d' "$i")
    echo "long unit$n(long x);" >> include/units.h
    cat > "src/unit$n.c" <<C
#include "units.h"

/* Unit $n: a little arithmetic, so that each object file differs. */
long unit$n(long x) {
    long total = 0;
    for (long k = 0; k < $i; k++) {
        total += (x + k) * $i % 97;
    }
    return total + $i;
}
C
    i=$((i + 1))
done
echo '#endif' >> include/units.h
{
    echo '#include <stdio.h>'
    echo '#include "units.h"'
    echo ''
    echo 'int main(void) {'
    echo '    long sum = 0;'
    i=1
    while [ "$i" -le "$count" ]; do
        echo "    sum += unit$(printf '%02d' "$i")($i);"
        i=$((i + 1))
    done
    printf '    printf("%%ld\\n", sum);\n'
    echo '    return 0;'
    echo '}'
} > src/main.c
