#!/usr/bin/env bash
# release-check.sh: the release as a user's build meets it. Deploys the reactor (tests skipped) to a file repository,
# then builds README.md's program, with README.md's dependency snippet, as a project of its own (release-check/pom.xml)
# whose nccl4j can only come from that file repository, and runs it. CI runs it after the tests (.ci/run).
#
#   scripts/release-check.sh [work-dir]     (default: target/release-check at the repository root)
#
# work-dir is deleted first (rm -rf) and made anew; it ends up holding:
#   repo/       the file repository: nccl4j-parent, nccl4j-native and nccl4j-core, each with its POM, jar, sources
#               and Javadoc jars (nccl4j-examples and nccl4j-tools are not published: their POMs skip the deploy)
#   m2/         the local repository of both builds: a copy of ~/.m2/repository without org/nccl4j (jars hard-linked
#               where the file system allows, every other file copied, so that Maven writes nothing into
#               ~/.m2), so that third-party artifacts need no download; nccl4j comes into it from repo/ only
#   consumer/   the consumer project: pom.xml, src/main/java/<the README's class>.java, target/
#   deploy.log, consumer.log, run.log   each step's output
# Checks, each failure said on stderr with exit status 1: what repo/ holds (above) and the Central metadata of the
# parent's POM; that the consumer compiles; that nccl4j reached m2/ from repo/; that the program, run on a machine
# without a GPU or NCCL, ends in nccl4j's clean error (a typed org.nccl4j exception, status 1) and not in a missing
# class or native library, or, where it finds a GPU and NCCL, prints its sum; and that ~/.m2/repository/org/nccl4j was
# left as it was (nothing of this version written there). Needs what the build needs (JDK 17+, Maven, gcc) and the network for what ~/.m2 lacks.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
tool=release-check.sh
work=${1:-$root/target/release-check}
case "$work" in /*) ;; *) work=$root/$work ;; esac
work=$(realpath -m -- "$work")
if [ "$work" = / ] || [[ $root/ == "$work"/* ]]; then
  echo "$tool: will not use $work: it is / or holds the repository root, and $tool deletes it first (rm -rf)" >&2
  exit 2
fi
user_repo=$HOME/.m2/repository
repo=$work/repo
m2=$work/m2
consumer=$work/consumer
started=$(date +%s)

fail() { # LOG MESSAGE...: the message, then the log's last lines
  local log=$1
  shift
  echo "$tool: $*" >&2
  if [ -f "$log" ]; then
    echo "--- the last lines of $log:" >&2
    tail -25 "$log" >&2
  fi
  exit 1
}

# fenced BLOCK_LANGUAGE SECTION FILE: the first ```LANGUAGE block after the line "SECTION" of FILE
fenced() {
  awk -v lang="$1" -v section="$2" '
    $0 == section { in_section = 1; next }
    in_section && !inside && $0 == "```" lang { inside = 1; next }
    inside && $0 == "```" { exit }
    inside { print }' "$3"
}

rm -rf "$work"
mkdir -p "$work" "$consumer/src/main/java"
stamp=$work/started
touch "$stamp"

echo "== local repository $m2 (from $user_repo, without org/nccl4j)"
if [ -d "$user_repo" ]; then
  cp -al "$user_repo" "$m2" 2>/dev/null || { rm -rf "$m2"; cp -a "$user_repo" "$m2"; }
  rm -rf "$m2/org/nccl4j"
  # Maven rewrites some files of a local repository in place (_remote.repositories, metadata): those are copies
  find "$m2" -type f ! -name '*.jar' -exec sh -c 'for f; do cp -p "$f" "$f.copy" && mv -f "$f.copy" "$f"; done' sh {} +
else
  mkdir -p "$m2"
fi

echo "== mvn deploy to $repo (tests skipped)"
# deploy runs the install phase too: skipped, so that the consumer finds nccl4j in repo/ only
mvn -B -ntp -Dmaven.repo.local="$m2" -DskipTests -Dmaven.install.skip=true -DaltDeploymentRepository="release-check::file://$repo" deploy \
  > "$work/deploy.log" 2>&1 || fail "$work/deploy.log" "mvn deploy failed (see $work/deploy.log)"

snippet=$(fenced xml "## Add it to a project" README.md)
program=$(fenced java "## A program" README.md)
[ -n "$snippet" ] || fail "" "README.md has no \`\`\`xml block under \"## Add it to a project\""
[ -n "$program" ] || fail "" "README.md has no \`\`\`java block under \"## A program\""
tag() { sed -n "s:.*<$1>\\([^<]*\\)</$1>.*:\\1:p" <<< "$snippet" | head -1; }
group=$(tag groupId)
artifact=$(tag artifactId)
version=$(tag version)
main=$(sed -n 's/^public class \([A-Za-z0-9_]*\).*/\1/p' <<< "$program" | head -1)
[ -n "$main" ] || fail "" "README.md's program has no line \"public class NAME\""
echo "== README.md: $group:$artifact:$version, class $main"

dir=$repo/${group//.//}
for a in nccl4j-parent nccl4j-native nccl4j-core; do
  base=$dir/$a/$version/$a-$version
  [ -f "$base.pom" ] || fail "" "$repo has no $a $version POM ($base.pom): does README.md's version match the pom's?"
  if [ "$a" != nccl4j-parent ]; then
    for c in "" -sources -javadoc; do
      [ -f "$base$c.jar" ] || fail "" "$repo has no $base$c.jar: Maven Central needs the jar, its sources and Javadoc"
    done
  fi
done
for a in nccl4j-examples nccl4j-tools; do
  [ ! -e "$dir/$a" ] || fail "" "$repo has $a: it is not to be published (maven.deploy.skip in its POM)"
done
for element in name description url licenses developers scm; do
  grep -q "<${element}[ >]" "$dir/nccl4j-parent/$version/nccl4j-parent-$version.pom" \
    || fail "" "the parent POM has no <$element>: Maven Central requires it"
done

echo "== the consumer: README.md's program against $repo"
SNIPPET=$snippet awk '/<!-- README.md.s dependency snippet -->/ { print ENVIRON["SNIPPET"]; next } { print }' \
  release-check/pom.xml > "$consumer/pom.xml"
printf '%s\n' "$program" > "$consumer/src/main/java/$main.java"
mvn -B -ntp -f "$consumer/pom.xml" -Dmaven.repo.local="$m2" -Drelease.repo="file://$repo" \
  compile dependency:build-classpath -Dmdep.outputFile="$consumer/classpath.txt" > "$work/consumer.log" 2>&1 \
  || fail "$work/consumer.log" "the consumer did not build (see $work/consumer.log)"
origin=$m2/${group//.//}/$artifact/$version/_remote.repositories
grep -q '>release-check=$' "$origin" 2>/dev/null \
  || fail "" "$artifact did not come from the file repository ($origin: $(cat "$origin" 2>/dev/null || echo missing))"

echo "== java $main"
status=0
# a clean environment: no launcher's variables (RANK, OMPI_*, SLURM_*, ...) reach the program
clean=(PATH="$PATH" HOME="$HOME")
[ -z "${JAVA_HOME:-}" ] || clean+=(JAVA_HOME="$JAVA_HOME")
env -i "${clean[@]}" java -cp "$consumer/target/classes:$(cat "$consumer/classpath.txt")" "$main" > "$work/run.log" 2>&1 || status=$?
if [ "$status" = 0 ]; then
  grep -q '^rank 0: ' "$work/run.log" || fail "$work/run.log" "$main exited 0 without its \"rank 0: ...\" line"
  echo "$main ran: $(grep '^rank 0: ' "$work/run.log")"
else
  first=$(grep -m1 '^Exception in thread "main" ' "$work/run.log" || true)
  case "$status:$first" in
    1:'Exception in thread "main" org.nccl4j.'*) echo "$main ended in nccl4j's clean error: ${first#*\"main\" }" ;;
    *) fail "$work/run.log" "$main ended with status $status and not in a nccl4j exception" ;;
  esac
  if grep -qE "UnsatisfiedLinkError|NoClassDefFoundError|ClassNotFoundException|nccl4j's own native library" \
      "$work/run.log"; then
    fail "$work/run.log" "$main could not load a class or native library of the release"
  fi
fi

# (only this version's directories: other builds on the machine may install their own versions meanwhile)
changed=$(find "$user_repo/org/nccl4j" -path "*/$version/*" -newer "$stamp" 2>/dev/null | head -3)
[ -z "$changed" ] || fail "" "$user_repo/org/nccl4j was written to: $changed"
echo "$tool: ok: $group:$artifact:$version from $repo builds and runs README.md's program ($(($(date +%s) - started)) s)"
