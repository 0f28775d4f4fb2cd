#!/usr/bin/env bash
# Builds nccl4j and assembles, in bundle/ (git-ignored), everything a Linux x86-64 box with NVIDIA GPUs but
# no Java or Maven needs to run the GPU tests and the examples: a jlink'd JRE, the runtime jars (the CUDA
# presets' JNI jar trimmed to the libraries nccl4j loads), the test classes and the JUnit console launcher.
#
#   scripts/gpu-bundle.sh [bundle-dir]      (default: bundle)
#   BUNDLE_TESTS=0   leave out the test classes and the JUnit console launcher (4 MiB): for benchmark calls whose
#                    bundle travels with other files (the GPU machines of these runs take 64 MiB in all); gpu-test.sh refuses
#                    such a bundle, naming this variable
#   CUDA=12          a bundle for the CUDA 12 runtime (default CUDA=13): built with -Pcuda12 (the JavaCPP Presets for
#                    CUDA 12.9 for the examples and the doctor), carrying libcudart.so.12 in cuda12/ (0.7 MB), which
#                    gpu-test.sh then makes nccl4j use (NCCL4J_CUDART). The library comes from CUDART12=/path/to/
#                    libcudart.so.12 when set, else a CUDA 12 install here (/usr/local/cuda-12*, the ld.so cache), else
#                    Debian's libcudart12 package, fetched with apt-get download into a scratch directory (the
#                    system's apt configuration is left as it is). cuBLAS, cuRAND and NVRTC 12 are not carried: the
#                    examples' GPU tests need them on the GPU machine (docs/cuda.md).
#
# bundle-dir is deleted first (rm -rf) and made anew. A relative bundle-dir is relative to the repository root (the
# directory above scripts/), wherever you run the script from: scripts/gpu-bundle.sh bundle makes <root>/bundle. It
# may not be /, the repository root or a directory that holds it, nor one that holds files git tracks.
#
# Needs JDK 17+ (jlink), Maven and gcc, as the build does.
set -euo pipefail
shopt -s nullglob
cd "$(dirname "$0")/.."
root=$(pwd -P)
out=${1:-bundle}
# From here on $out is absolute (relative: to the repository root, the working directory now) and without . or ..
# (realpath -m: the directory need not exist yet), so that each step below names the same directory.
case "$out" in /*) ;; *) out=$root/$out ;; esac
out=$(realpath -m -- "$out")
if [ "$out" = / ] || [[ $root/ == "$out"/* ]]; then
  echo "gpu-bundle.sh: will not use $out as the bundle directory: it is / or the repository root ($root), or holds it, and gpu-bundle.sh deletes it first (rm -rf)" >&2
  exit 2
fi
if [ -d "$out" ] && [ -n "$(git -C "$root" ls-files -- "$out" 2>/dev/null | head -1)" ]; then
  echo "gpu-bundle.sh: will not use $out as the bundle directory: it holds files git tracks ($(git -C "$root" ls-files -- "$out" | head -1), ...), and gpu-bundle.sh deletes it first (rm -rf)" >&2
  exit 2
fi
tests=${BUNDLE_TESTS:-1}
case "$tests" in 0|1) ;; *) echo "gpu-bundle.sh: BUNDLE_TESTS=$tests: use 1 (the default) or 0" >&2; exit 2 ;; esac
cuda=${CUDA:-13}
case "$cuda" in 12) profile=(-Pcuda12) ;; 13) profile=() ;; *) echo "gpu-bundle.sh: CUDA=$cuda: use 13 (the default) or 12" >&2; exit 2 ;; esac
javacpp_platform=linux-x86_64
# JNI libraries of the CUDA presets that nccl4j and its examples load.
cuda_jni_libs=${CUDA_JNI_LIBS:-"libjnicudart.so libjnicublas.so libjnicurand.so libjninvrtc.so libjninvml.so"}
console_version=1.14.1

# Plots (Plot, nccl4j-perf --plot) draw text through the JRE's libfontmanager.so, which a JDK built against the
# system's HarfBuzz and FreeType (Debian's, Ubuntu's) links to them, and they to GLib, Graphite2, libpng and Brotli;
# a GPU machine without Java has none of these, nor a font. carry_font_stack JRE copies into JRE/lib each library
# that ldd names for libfontmanager.so, libawt.so and libawt_headless.so, but those every Ubuntu has (glibc, libstdc++,
# libgcc_s, zlib, PCRE2): the JRE's libraries look in their own directory first (RPATH $ORIGIN, which the loader
# also follows for the libraries they load), so no LD_LIBRARY_PATH is needed and nothing outside the JRE sees them.
# It adds DejaVu Sans as JRE/lib/fonts/DejaVuSans.ttf and a fontconfig.properties that maps Java's logical fonts to it,
# which Java reads where the machine has no fontconfig or no font. What it cannot carry it says, and goes on: a plot
# is no measurement. To keep the bundle's size, it deletes the libraries that a headless JRE never loads: those for a
# display (libawt_xawt, libjawt, libsplashscreen), sound (libjsound) and medialib's image filters (libmlib_image,
# which Java replaces by its own code when it is missing), 1.2 MB of the 4.5 MB it adds.
carry_font_stack() { # JRE
  local jre=$1 dep name font f added=() left=()
  if [ ! -f "$jre/lib/libfontmanager.so" ]; then
    echo "gpu-bundle.sh: warning: $jre/lib/libfontmanager.so is missing: no font stack carried for plots" >&2
    return 0
  fi
  rm -f "$jre"/lib/{libawt_xawt,libjawt,libsplashscreen,libjsound,libmlib_image}.so
  while read -r dep; do
    name=${dep##*/}
    case "$name" in
      libc.so.*|libm.so.*|libdl.so.*|libpthread.so.*|librt.so.*|ld-linux*|libstdc++.so.*|libgcc_s.so.*) ;;
      libz.so.*|libpcre2-8.so.*) ;;
      *) if [[ $dep != "$jre"/* ]]; then cp -L "$dep" "$jre/lib/$name"; added+=("$jre/lib/$name"); fi ;;
    esac
  done < <(for f in libfontmanager.so libawt.so libawt_headless.so; do
             if [ -f "$jre/lib/$f" ]; then ldd "$jre/lib/$f"; fi
           done | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u)
  # each now resolves to the JRE's copy (not so where a JDK's libraries have RUNPATH, which the loader does not follow)
  while read -r name dep; do
    if [ -f "$jre/lib/$name" ] && [ "$dep" != "$jre/lib/$name" ]; then left+=("$dep"); fi
  done < <(ldd "$jre/lib/libfontmanager.so" | awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }')
  if [ ${#left[@]} != 0 ]; then
    echo "gpu-bundle.sh: warning: libfontmanager.so loads ${left[*]}, not the JRE's copies: plots may fail where" \
      "those are missing" >&2
  fi
  font=""
  for f in /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf /usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf \
           /usr/share/fonts/dejavu/DejaVuSans.ttf /usr/share/fonts/TTF/DejaVuSans.ttf; do
    [ -f "$f" ] && { font=$f; break; }
  done
  if [ -z "$font" ]; then
    echo "gpu-bundle.sh: warning: no DejaVuSans.ttf here (fonts-dejavu-core): plots need a font on the GPU machine" >&2
  else
    mkdir -p "$jre/lib/fonts"
    cp "$font" "$jre/lib/fonts/DejaVuSans.ttf"
    added+=("$jre/lib/fonts/DejaVuSans.ttf")
    printf '%s\n' "# gpu-bundle.sh: Java's logical fonts in DejaVu Sans, lib/fonts/DejaVuSans.ttf, where the machine" \
      "# has no fontconfig or no font" "version=1" "allfonts.latin-1=DejaVu Sans" "sequence.allfonts=latin-1" \
      "filename.DejaVu_Sans=\$JRE_LIB_FONTS/DejaVuSans.ttf" > "$jre/lib/fontconfig.properties"
  fi
  if [ ${#added[@]} != 0 ]; then
    echo "font stack for plots: ${#added[@]} files in $jre/lib, $(du -cb "${added[@]}" | tail -1 | cut -f1) bytes"
  fi
}

rm -rf "$out"
mkdir -p "$out/lib" "$out/deps"
# Build, and let Maven copy each module's dependencies (test scope: the tests run from the bundle too).
mvn -q -B "${profile[@]}" -DskipTests package dependency:copy-dependencies -DincludeScope=test -DexcludeGroupIds=org.nccl4j
for m in nccl4j-*/target/dependency; do cp -f "$m"/*.jar "$out/deps/"; done
if [ "$tests" = 1 ]; then
  mvn -q -B dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:$console_version \
      -DoutputDirectory="$out/lib"
fi

for f in "$out"/deps/*.jar; do
  name=$(basename "$f")
  case "$name" in
    junit-*|opentest4j-*|apiguardian-*) ;;             # inside the console launcher already
    jmh-*|jopt-simple-*|commons-math3-*) ;;           # the allocation benchmark (JMH) runs on CPU machines only
    kubernetes-model-*|jackson-*-3.[0-9]*.jar|snakeyaml-engine-*) ;;  # the recipes' check (ClusterRecipesTest): CPU only
    cuda-*-"$javacpp_platform".jar)
      src=$(cd "$(dirname "$f")" && pwd)/$name
      dst=$out/lib/$name
      tmp=$(mktemp -d)
      mkdir -p "$tmp/keep/org/bytedeco/cuda/$javacpp_platform"
      for l in $cuda_jni_libs; do
        unzip -q -j "$src" "org/bytedeco/cuda/$javacpp_platform/$l" -d "$tmp/keep/org/bytedeco/cuda/$javacpp_platform"
      done
      (cd "$tmp/keep" && zip -q -r "$dst" .)
      rm -rf "$tmp" ;;
    *) cp "$f" "$out/lib/" ;;
  esac
done
rm -rf "$out/deps"
# Each module's jar of the version the build just made (its newest main jar's: a target directory may still hold the
# jars of an earlier version, whose classes would then sit on the class path twice), and its tests jar; not the
# sources, Javadoc or platform jars.
for m in nccl4j-native nccl4j-core nccl4j-examples nccl4j-tools; do
  # shellcheck disable=SC2010,SC2012  # names made by Maven: <module>-<version>[-classifier].jar
  newest=$(ls -t "$m/target/$m"-*.jar 2> /dev/null | grep -v -E -- "-(tests|sources|javadoc|$javacpp_platform)\.jar$" \
    | head -1)
  [ -n "$newest" ] || { echo "gpu-bundle.sh: the build made no $m jar" >&2; exit 2; }
  version=${newest#"$m/target/$m"-}
  version=${version%.jar}
  for j in "$m/target/$m-$version".jar "$m/target/$m-$version"-tests.jar; do
    [ -f "$j" ] || continue
    case "$j" in
      *-tests.jar) if [ "$tests" = 1 ]; then cp "$j" "$out/lib/"; fi ;;
      *-sources.jar|*-javadoc.jar|*-"$javacpp_platform".jar) ;;
      *) cp "$j" "$out/lib/" ;;
    esac
  done
done
rm -f "$out"/lib/*-"$javacpp_platform".jar.tmp "$out"/lib/nccl4j-native-*-"$javacpp_platform".jar

# CUDA=12: the CUDA 12 runtime, which the GPU machines (a CUDA 13 driver and runtime) do not have.
if [ "$cuda" = 12 ]; then
  mkdir -p "$out/cuda12"
  cudart=${CUDART12:-}
  if [ -z "$cudart" ]; then   # the newest /usr/local/cuda-12.x (the glob sorts 12.4 before 12.9), else the ld.so cache's
    for f in /usr/local/cuda-12*/targets/x86_64-linux/lib/libcudart.so.12; do cudart=$f; done
  fi
  [ -n "$cudart" ] || cudart=$(ldconfig -p 2>/dev/null | awk '/libcudart\.so\.12 .*x86-64/ { print $NF; exit }')
  if [ -z "$cudart" ]; then
    # Debian's package of the CUDA 12 runtime (non-free), fetched with apt's own client into a scratch directory.
    apt_dir=$(mktemp -d)
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/cache/archives/partial"
    echo "deb http://deb.debian.org/debian trixie non-free" > "$apt_dir/sources.list"
    : > "$apt_dir/status"
    apt_opts=(-o Dir::Etc::SourceList="$apt_dir/sources.list" -o Dir::Etc::SourceParts=/nonexistent
              -o Dir::State::Lists="$apt_dir/lists" -o Dir::State::Status="$apt_dir/status" -o Dir::Cache="$apt_dir/cache"
              -o APT::Architecture=amd64 -o Debug::NoLocking=1 -o APT::Sandbox::User="$(id -un)")
    if apt-get -qq "${apt_opts[@]}" update && (cd "$apt_dir" && apt-get -qq "${apt_opts[@]}" download libcudart12 2>/dev/null); then
      dpkg-deb -x "$apt_dir"/libcudart12_*.deb "$apt_dir/x"
      cudart=$(find "$apt_dir/x" -name 'libcudart.so.12' | head -1)
      cp "$(find "$apt_dir/x" -path '*/doc/libcudart12/copyright')" "$out/cuda12/copyright" 2>/dev/null || true
    fi
  fi
  if [ -z "$cudart" ] || [ ! -e "$cudart" ]; then
    echo "gpu-bundle.sh: CUDA=12: no libcudart.so.12 found (CUDART12, /usr/local/cuda-12*, the ld.so cache, Debian's libcudart12): set CUDART12=/path/to/libcudart.so.12" >&2
    exit 2
  fi
  cp -L "$cudart" "$out/cuda12/libcudart.so.12"
  if [ -n "${apt_dir:-}" ]; then rm -rf "$apt_dir"; fi
  echo "bundle: CUDA 12 runtime from $cudart ($(du -h "$out/cuda12/libcudart.so.12" | cut -f1))"
fi

# java.desktop: nccl4j-perf's --plot and Plot draw PNGs with XChart (java.awt, javax.imageio), headless.
jlink --add-modules java.base,java.logging,java.management,jdk.management,jdk.unsupported,java.naming,java.xml,jdk.zipfs,java.desktop \
      --strip-debug --no-header-files --no-man-pages --compress=2 --output "$out/jre"
# The JRE's native libraries keep symbol tables that nothing here reads: without them the bundle is 5 MiB smaller
# (libjvm.so 23 -> 20 MiB), which keeps it with the source tree under the 64 MiB the GPU machines of these runs take.
if command -v strip >/dev/null; then
  find "$out/jre" -name '*.so' -exec strip --strip-unneeded {} +
fi
carry_font_stack "$out/jre"
cp scripts/gpu-test.sh scripts/nccl4j-run scripts/nccl4j-perf scripts/nccl4j-trace scripts/nccl4j-doctor scripts/departures.sh scripts/ports-attack.sh scripts/env.sh "$out/"
# departures.sh's torch rows (TORCH=1) run the PyTorch counterpart, which it looks for in bench/ beside itself
mkdir -p "$out/bench"
cp scripts/bench/torch_departures.py scripts/bench/ports_attack.py "$out/bench/"
# the sharded-training comparison runs from the bundle too: bundle/bench/sharded-compare.sh uses the bundle above it
cp scripts/bench/sharded-compare.sh scripts/bench/sharded_compare.py "$out/bench/"
echo "bundle: $out, $(du -sh "$out" | cut -f1)$([ "$tests" = 1 ] || echo ", without the tests (BUNDLE_TESTS=0)")$([ "$cuda" = 13 ] || echo ", for the CUDA 12 runtime (cuda12/)")"
