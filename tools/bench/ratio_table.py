#!/usr/bin/env python3
"""Ratio and quality of H5Z-FZ's lossy presets against SZ3, SPERR and ZFP, at value-range-relative bounds.

A benchmark program, not a test. For each field, each value-range-relative
("NOA") bound rel in 1e-2, 1e-3, 1e-4 and each compressor it writes the field
through h5py into an in-memory HDF5 file (or, for pysz and SPERR, compresses
it in memory), reads it back, and prints markdown tables of

  - the compression ratio (the field's bytes / the dataset's stored bytes),
    and the ratio over SZ3's ratio in the same case;
  - PSNR in dB, 20 log10(max - min) - 10 log10(MSE);
  - the largest |x - x'| divided by the absolute bound, and the number of
    elements whose error exceeds the bound;
  - per compressor, bound and chunking: the geometric mean over the fields of
    ratio / SZ3's ratio, and the smallest such quotient (the form of issue 14's
    targets);
  - per preset, bound and chunking: the same over each anchor of issue 30's
    targets, and the PSNR difference to SZ3-best (see Compressors).

The absolute bound is rel x (max - min), max and min taken over the field's
finite elements that are not its fill value; the range, the errors, PSNR and
the violation counts all leave fill elements out. A fill element that does not
come back bit for bit is counted separately ("fill changed").

Compressors, every one given the same absolute bound (the default list is
all of them but sz3-rel):

  - sz3: hdf5plugin.SZ3(absolute=bound) (hdf5plugin's SZ3, one thread here).
  - sz3-best: SZ3 through pysz (`pip install pysz`), mode ABS, with each of
    its three predictors (INTERP, INTERP_LORENZO, LORENZO_REG); the cell is the
    predictor with the best ratio for the field and chunking, and names it.
  - sperr: SPERR's point-wise error mode, numcodecs-wasm-sperr's
    Sperr(mode="pwe", pwe=bound) (`pip install numcodecs-wasm-sperr`).
  - zfp: hdf5plugin.Zfp(accuracy=bound), ZFP's fixed-accuracy mode.
  - H5Z-FZ presets (fzgpu 3, cusz 4, cuszhi-tp 5, cuszhi-cr 6), with
    compression_opts from tools/python/h5fz, mode abs with the same bound.
    `--fz-mode noa` gives them mode noa with rel instead: the filter then takes
    the range of each chunk (fill elements left out), which is the same bound
    for the whole field as one chunk and a tighter one for smaller chunks.
    A preset the filter refuses when the dataset is created prints as "n/a",
    with the filter's message below the tables.
  - sz3-rel (only when asked for, `--compressors`): hdf5plugin.SZ3(relative=rel),
    SZ3's own value-range-relative mode. SZ3 takes the range of each chunk with
    every element in it (fill values included), so on a field with land at
    -1e10 its bound is about rel x 1e10; its errors are still measured against
    the absolute bound above.

sz3, zfp and the presets go through h5py and HDF5 chunks; sz3-best and sperr
are no HDF5 filters and compress the field, or each chunk on its own, in
memory (ratio_table_anchors.py). A missing pysz or numcodecs-wasm-sperr
prints how to install it and that compressor is left out. After the tables,
issue 30's summary: per preset, the geometric mean over the fields of its
ratio over each anchor's (SZ3-best, SZ3 hdf5plugin, SPERR, ZFP) with the
worst field, and its PSNR minus SZ3-best's. The anchors' elements over the
bound are listed; only H5Z-FZ's make the exit status 1.

Two chunkings (`--chunkings`):

  - whole: the whole field as one chunk;
  - 4mib: chunks of about 4 MiB. Rule: the fast axes stay whole and the
    slowest axis is split into the fewest equal pieces that keep a chunk
    within 4 MiB: n = ceil(field bytes / 4 MiB) chunks of ceil(shape[0] / n)
    slices each (the last one may be shorter; HDF5 pads it with the fill
    value). When one slice of the slowest axis is already over 4 MiB, the same
    rule moves to the next axis (chunk 1 along the slower ones). A field of
    4 MiB or less stays one chunk, and its results are those of "whole".
    The chunk shape is printed in the tables.

Fields: the real fields of --data (default $FZ_DATA, else ../shared/data
beside the repository): wmag91.float, 999x999.float, vorticity.128_128_41,
vorticity.512_512, pressure.384_384.f64 (const32x32x59 is left out: two
values); and from the ferret-datasets NetCDF-3 files in --ferret-dir
(/usr/share/ferret-vis/data; Debian ferret-datasets), converted with
`nccopy -k nc4` (Debian netcdf-bin) and read with h5py:
levitus_climatology.cdf TEMP and SALT (float32 20 x 180 x 360, land at the
_FillValue -1e10) and etopo5.cdf ROSE (relief, float32 2161 x 4320). These
two sets (`--sets shared,ferret`) are the default. `--sets public` (or
`--sets shared,ferret,public`) adds issue 30's held-out set: the 23 fields of
tools/bench/public_fields.py (NCL's, Iris's and matplotlib's sample data and
the other ferret-datasets files), read from its cache (--public-dir, default
$FZ_PUBLIC_FIELDS, else ~/.cache/h5z-fz/public-fields) and extracted there
first when not cached; a field's fill value is the one its manifest gives. A
variable's _FillValue becomes the dataset's HDF5 fill value (create_dataset
fillvalue=) when the variable holds it, for every compressor: H5Z-FZ keeps
those elements exactly and leaves them out of a chunk's range, SZ3 compresses
them as data.

The plugin: --plugin-dir, else the first folder of HDF5_PLUGIN_PATH holding
libH5Zfz.so, else <repo>/build/plugin. H5Z_FZ_THREADS is left as it is
(unset: all cores). Run, from the repository root:

    python3 tools/bench/ratio_table.py --plugin-dir build-R/plugin
    python3 tools/bench/ratio_table.py --fields wmag91,levitus --bounds 1e-3 --chunkings whole \\
        --compressors sz3,sz3-rel,cusz,cuszhi-cr
    python3 tools/bench/ratio_table.py --sets public --chunkings whole \\
        --compressors sz3,sz3-best,sperr,zfp,cuszhi-cr

Progress goes to stderr, the tables to stdout.
"""

# The program is this file plus four modules beside it: ratio_table_fields.py
# (the arrays and their chunks), ratio_table_compressors.py (the names; SZ3, ZFP
# and the presets through HDF5; the quality), ratio_table_anchors.py (pysz and
# SPERR around HDF5, issue 30's summary) and ratio_table_report.py (the tables).

import argparse
import logging
import os
import platform
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tools", "python"))
import h5fz  # noqa: E402  (preset names, FILTER_ID, PLUGIN_FILE)

from ratio_table_anchors import (available, measure_direct, print_anchor_bounds,  # noqa: E402
                                 print_anchor_summary, print_predictors, versions)
from ratio_table_compressors import (OTHERS, SPERR, SZ3, SZ3_BEST, SZ3_REL, ZFP,  # noqa: E402
                                     compressor_label, measure)
from ratio_table_fields import (DEFAULT_SETS, FERRET_DIR, FERRET_FIELDS, REAL_FIELDS, SETS,  # noqa: E402
                                chunk_shape, load_ferret_fields, load_public_fields, load_real_fields)
import public_fields  # noqa: E402  (the held-out set's cache folder)
from ratio_table_report import Notes, fmt_shape, print_summary, print_tables  # noqa: E402

BOUNDS = (1e-2, 1e-3, 1e-4)
CHUNKINGS = ("whole", "4mib")
DEFAULT_COMPRESSORS = (SZ3, SZ3_BEST, SPERR, ZFP, "fzgpu", "cusz", "cuszhi-tp", "cuszhi-cr")


# ---- main -------------------------------------------------------------------------------

def find_plugin_dir(explicit):
    candidates = [explicit] if explicit else []
    candidates += [p for p in os.environ.get("HDF5_PLUGIN_PATH", "").split(os.pathsep) if p]
    candidates.append(os.path.join(REPO, "build", "plugin"))   # where tools/setup/build.sh puts it
    for candidate in candidates:
        if os.path.isfile(os.path.join(candidate, h5fz.PLUGIN_FILE)):
            return os.path.abspath(candidate)
    sys.exit("ratio_table: %s not found in %s (build the plugin, pass --plugin-dir)"
             % (h5fz.PLUGIN_FILE, ", ".join(candidates)))


def comma_list(text):
    return [t.strip() for t in text.split(",") if t.strip()]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="See the module docstring (this file) for what is measured.")
    parser.add_argument("--data", default=os.environ.get("FZ_DATA", os.path.join(REPO, "..", "shared", "data")),
                        help="folder of the real fields (default: $FZ_DATA, else ../shared/data)")
    parser.add_argument("--ferret-dir", default=FERRET_DIR, help="ferret-datasets folder (default: %(default)s)")
    parser.add_argument("--public-dir", default=public_fields.default_dir(),
                        help="cache of tools/bench/public_fields.py (default: $FZ_PUBLIC_FIELDS, else "
                             "~/.cache/h5z-fz/public-fields)")
    parser.add_argument("--sets", type=comma_list, default=list(DEFAULT_SETS),
                        help="comma-separated field sets, of %s (default: %s; public: the held-out fields "
                             "of public_fields.py)" % (", ".join(SETS), ",".join(DEFAULT_SETS)))
    parser.add_argument("--plugin-dir", help="folder holding libH5Zfz.so")
    parser.add_argument("--fields", type=comma_list, default=[],
                        help="comma-separated parts of field names to keep in the sets, e.g. wmag91,levitus "
                             "(default: all: %s, and with --sets public: %s)"
                        % (", ".join([f[0] for f in REAL_FIELDS] + [f[0] for f in FERRET_FIELDS]),
                           ", ".join(f[0] for f in public_fields.FIELDS)))
    parser.add_argument("--bounds", type=lambda s: [float(b) for b in comma_list(s)], default=list(BOUNDS),
                        help="comma-separated NOA bounds (default: 1e-2,1e-3,1e-4)")
    parser.add_argument("--chunkings", type=comma_list, default=list(CHUNKINGS),
                        help="comma-separated, of whole and 4mib (default: whole,4mib)")
    parser.add_argument("--compressors", type=comma_list, default=list(DEFAULT_COMPRESSORS),
                        help="comma-separated: %s and H5Z-FZ lossy preset names or ids "
                             "(default: %s)" % (", ".join(OTHERS), ",".join(DEFAULT_COMPRESSORS)))
    parser.add_argument("--fz-mode", choices=("abs", "noa"), default="abs",
                        help="H5Z-FZ error mode: abs with rel x the field's range (default), or noa with rel")
    args = parser.parse_args()
    for s in args.sets:
        if s not in SETS:
            parser.error("unknown field set %r (known: %s)" % (s, ", ".join(SETS)))
    for c in args.chunkings:
        if c not in CHUNKINGS:
            parser.error("unknown chunking %r (known: %s)" % (c, ", ".join(CHUNKINGS)))
    names = []
    for c in args.compressors:
        if c.lower() in OTHERS:
            names.append(c.lower())
            continue
        try:
            pid = h5fz.preset_id(int(c) if c.isdigit() else c)
        except (ValueError, TypeError) as e:
            parser.error(str(e))
        if pid not in h5fz.LOSSY_PRESETS:
            parser.error("%s is not a lossy H5Z-FZ preset (lossy: %s)" % (
                c, ", ".join(h5fz.PRESET_NAMES[p] for p in sorted(h5fz.LOSSY_PRESETS))))
        names.append(h5fz.PRESET_NAMES[pid])
    args.compressors = list(dict.fromkeys(names))
    if not args.bounds or any(not (b > 0) for b in args.bounds):
        parser.error("bounds must be positive")
    return args


def main():
    args = parse_args()
    args.compressors, missing = available(args.compressors)
    for line in missing:
        print(line, file=sys.stderr)
    plugin_dir = find_plugin_dir(args.plugin_dir)
    os.environ["HDF5_PLUGIN_PATH"] = plugin_dir   # before HDF5 starts
    import h5py
    import hdf5plugin

    logging.getLogger("hdf5plugin").setLevel(logging.ERROR)   # "Only absolute and norm2 modes properly tested"
    if not h5py.h5z.filter_avail(h5fz.FILTER_ID):
        sys.exit("ratio_table: HDF5 cannot load %s from %s" % (h5fz.PLUGIN_FILE, plugin_dir))

    fields = load_real_fields(os.path.abspath(args.data), args.fields) if "shared" in args.sets else []
    if "ferret" in args.sets:
        fields += load_ferret_fields(args.ferret_dir, args.fields, h5py)
    if "public" in args.sets:
        fields += load_public_fields(os.path.abspath(args.public_dir), args.fields)
    if not fields:
        sys.exit("ratio_table: no field matches --fields %s" % ",".join(args.fields))

    started = time.time()
    print("ratio_table: %s" % time.strftime("%Y-%m-%d %H:%M %Z"))
    print("machine: %s, %d logical CPUs; H5Z_FZ_THREADS=%s" % (
        platform.processor() or platform.machine(), os.cpu_count(), os.environ.get("H5Z_FZ_THREADS", "unset")))
    print("python %s, numpy %s, h5py %s (HDF5 %s), hdf5plugin %s; %s" % (
        platform.python_version(), np.__version__, h5py.version.version, h5py.version.hdf5_version,
        hdf5plugin.version, versions()))
    for line in missing:
        print(line)
    print("plugin: %s" % os.path.join(plugin_dir, h5fz.PLUGIN_FILE))
    print("bound: abs = NOA x (max - min) over the finite non-fill elements; SZ3 = hdf5plugin.SZ3(absolute=abs); "
          "H5Z-FZ presets: mode %s (%s)" % (args.fz_mode, "bound abs" if args.fz_mode == "abs"
                                             else "bound NOA x each chunk's range"))
    if "4mib" in args.chunkings:
        print("4mib chunks: fast axes whole, the slowest axis split into ceil(field bytes / 4 MiB) equal pieces; "
              "a field of 4 MiB or less stays one chunk (the results of whole)")
    if SZ3_BEST in args.compressors or SPERR in args.compressors or ZFP in args.compressors:
        print("anchors: sz3-best = pysz, mode ABS, the best of INTERP, INTERP_LORENZO, LORENZO_REG per field and "
              "chunking; sperr = Sperr(mode='pwe', pwe=abs); zfp = hdf5plugin.Zfp(accuracy=abs); sz3-best and "
              "sperr compress each chunk on its own in memory, ratio = field bytes / summed sizes")
    if SZ3_REL in args.compressors:
        print("SZ3 relative= : hdf5plugin.SZ3(relative=NOA), SZ3's range of each chunk, fill included; "
              "measured against abs")
    print()
    print("| field | source | dtype | shape | range (non-fill) | fill elements |")
    print("|---|---|---|---|---|---:|")
    for f in fields:
        print("| %s | %s | %s | %s | %.6g .. %.6g | %d |" % (
            f.name, f.source, f.data.dtype.name, fmt_shape(f.data.shape), f.lo, f.hi,
            int(np.count_nonzero(f.fill_mask))))
    print()

    results = {}
    for f in fields:
        for chunking in args.chunkings:
            for rel in args.bounds:
                for c in args.compressors:
                    key = (f.name, rel, chunking, c)
                    same = chunk_shape(f.data.shape, f.data.dtype.itemsize, chunking) == f.data.shape
                    if chunking != "whole" and same and (f.name, rel, "whole", c) in results:
                        results[key] = results[(f.name, rel, "whole", c)]   # one chunk either way
                        continue
                    if c in (SZ3_BEST, SPERR):
                        row = measure_direct(f, rel, chunking, c)
                    else:
                        row = measure(h5py, hdf5plugin, f, rel, chunking, c, args.fz_mode)
                    results[key] = row
                    print("ratio_table: %s %s NOA %g %s: %s" % (
                        f.name, chunking, rel, c, "%.2f in %.1f s" % (row["ratio"], row["seconds"])
                        if "ratio" in row else "refused" if "refused" in row else row["error"]),
                        file=sys.stderr, flush=True)

    notes = Notes()
    for chunking in args.chunkings:
        print_tables(fields, args.bounds, chunking, args.compressors, results, notes)
    print_predictors(fields, args.bounds, args.chunkings, results)
    print_summary(fields, args.bounds, args.chunkings, args.compressors, results)
    print_anchor_summary(fields, args.bounds, args.chunkings, args.compressors, results, compressor_label)
    notes.print()
    print_anchor_bounds(results)

    bad = [(k, r) for k, r in results.items() if k[3] not in OTHERS and "ratio" in r
           and (r["over"] or r["fill_changed"])]
    for (name, rel, chunking, c), r in bad:
        print("H5Z-FZ OUT OF BOUND: %s NOA %g %s %s: %d element(s) over, %d fill element(s) changed" % (
            name, rel, chunking, c, r["over"], r["fill_changed"]))
    failed = sum(1 for r in results.values() if "error" in r)
    print("%d measurement(s), %d refused (n/a), %d failed; H5Z-FZ elements over the bound or fill changed: %s; "
          "%.0f s" % (len(results), sum(1 for r in results.values() if "refused" in r), failed,
                      "none" if not bad else "%d case(s)" % len(bad), time.time() - started))
    return 1 if bad or failed else 0


if __name__ == "__main__":
    sys.exit(main())
