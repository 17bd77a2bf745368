#!/usr/bin/env bash
# Every set-up step, idempotent, nothing needed beyond python3, a JDK 17 and Maven:
#   .venv with the Python dependencies and jetspark installed editable,
#   the sbt launcher (dev/sbt fetches it), the jar built and copied into python/jetspark/jars/,
#   the jars of Spark's Kafka connector in python/jetspark/jars/kafka/ (the wheel bundles them) and a Kafka
#   broker's jars in target/kafka-broker/ (for the tests), each fetched by Maven through a pom in dev/maven/.
# Arguments are extra sbt tasks to run in the same sbt start (e.g. `test`); the jar is rebuilt when a
# JVM source or build file is newer than it.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$top"

if [[ ! -x .venv/bin/python ]]; then
  echo "bootstrap: creating .venv" >&2
  "${PYTHON:-python3}" -m venv .venv
fi
stamp=.venv/.jetspark-installed
if [[ ! -f $stamp || pyproject.toml -nt $stamp ]]; then
  echo "bootstrap: installing Python dependencies and jetspark (editable)" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test]"
  touch "$stamp"
fi

# fetch_jars POM DIR: the runtime dependencies of POM, copied into DIR unless DIR is newer than POM (a
# changed pom fetches anew). They are copied aside first: a fetch cut short leaves no DIR that looks done.
fetch_jars() {
  local pom=$1 dir=$2 part=target/$(basename "$2").part
  if [[ -d $dir && $dir -nt $pom ]]; then
    return
  fi
  echo "bootstrap: fetching the jars of $pom into $dir" >&2
  rm -rf "$part"
  mvn -B -q -f "$pom" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$top/$part"
  rm -rf "$dir"
  mkdir -p "$(dirname "$dir")"
  mv "$part" "$dir"
  touch "$dir"
}
# (The connector's kafka-clients is on the build's compile classpath too: before sbt runs.)
fetch_jars dev/maven/kafka-connector/pom.xml python/jetspark/jars/kafka
fetch_jars dev/maven/kafka-broker/pom.xml target/kafka-broker

version=$(sed -n 's/^version *= *"\(.*\)"/\1/p' pyproject.toml | head -1)
jar=target/scala-2.13/jetspark_2.13-$version.jar
if (($# > 0)) || [[ ! -f $jar ]] || [[ -n $(find jvm build.sbt project -newer "$jar" -type f -not -path 'project/target/*' -not -path 'project/project/*' 2>/dev/null | head -1) ]]; then
  echo "bootstrap: sbt $* package" >&2
  dev/sbt "$@" package
fi
mkdir -p python/jetspark/jars
if ! cmp -s "$jar" "python/jetspark/jars/$(basename "$jar")"; then
  rm -f python/jetspark/jars/*.jar
  cp "$jar" python/jetspark/jars/
fi
