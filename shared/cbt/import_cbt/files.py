"""``cbt import-cbt SRC DEST``'s file side: find CBT's config, model and DDL files under SRC, write the converted
project to DEST (which must not exist or be empty). Every problem with the input is an ``ImportFailed`` naming the
path, never a traceback."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from cbt.base.errors import CbtError
from cbt.import_cbt.project import Converted, ModelSource, UnreadableConfig, convert_project, read_config
from cbt.import_cbt.report import Note

MODEL_SUFFIXES = (".sql", ".yml", ".yaml")
_SKIPPED_DIRS = frozenset({".git", "node_modules", "frontend", "vendor"})


class ImportFailed(CbtError):
    """SRC is not a CBT project we can read, or DEST is not free to write."""


def import_project(src: Path, dest: Path) -> Converted:
    """Convert the CBT project at ``src`` into ``dest``; returns what was written and the report's notes."""
    config_file = _config_file(src)
    _check_dest(dest)
    try:
        config = read_config(_read(config_file), _rel(config_file, src))
    except UnreadableConfig as e:
        raise ImportFailed(f"{config_file} is not readable YAML:\n" + "\n".join(e.problems)) from e
    configured = {"external": config.external_paths, "transformations": config.transformation_paths}
    roots = {kind: [_find_root(src, p) for p in paths] for kind, paths in configured.items()}
    models: list[ModelSource] = []
    for kind, kind_roots in roots.items():
        for index, root in enumerate(found for found in kind_roots if found is not None):
            prefix = PurePosixPath("models", kind, *([f"path{index}"] if index else []))
            for file in _files(root):
                out = str(prefix / file.relative_to(root).as_posix())
                models.append(ModelSource(_rel(file, src), kind, out, _read(file)))
    model_files = {Path(src, m.path) for m in models}
    ddl = {_rel(f, src): _read(f) for f in _files(src) if f.suffix.lower() == ".sql" and f not in model_files}
    converted = convert_project(config, _rel(config_file, src), models, ddl)
    for kind, kind_roots in roots.items():
        for path, found in zip(configured[kind], kind_roots, strict=True):
            if found is None:
                converted.notes.append(
                    Note(
                        _rel(config_file, src),
                        1,
                        f"models.{kind}.paths {path}",
                        "not found inside the project's folder: its models were not converted; "
                        f"copy them under models/{kind}/ and run the import again",
                    )
                )
    _write(dest, converted.files)
    return converted


def _config_file(src: Path) -> Path:
    if not src.is_dir():
        raise ImportFailed(f"{src}: not a folder (give the CBT project's folder, the one holding config.yaml)")
    for name in ("config.yaml", "config.yml", "config.example.yaml"):
        if (src / name).is_symlink():  # (model files that are links are skipped too: nothing outside SRC is read)
            raise ImportFailed(f"{src / name}: a symbolic link; the import reads only files inside the project's "
                               "folder — copy the file there instead of linking it")
        if (src / name).is_file():
            return src / name
    raise ImportFailed(f"{src}: no config.yaml in it (the CBT project's folder holds config.yaml and models/)")


def _check_dest(dest: Path) -> None:
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ImportFailed(f"{dest}: exists and is not an empty folder; give a new or empty folder")


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ImportFailed(f"{path}: cannot read: {e}") from e


def _rel(path: Path, src: Path) -> str:
    return path.relative_to(src).as_posix()


def _find_root(src: Path, configured: str) -> Path | None:
    """Where a configured model path is inside SRC: CBT's paths are often container paths (``/app/models/…``), so
    its trailing parts are tried from the longest."""
    parts = PurePosixPath(configured).parts
    parts = parts[1:] if parts and parts[0] == "/" else parts
    inside = src.resolve()
    for start in range(len(parts)):
        candidate = src.joinpath(*parts[start:])
        if candidate.is_dir() and candidate.resolve().is_relative_to(inside):  # never `..` or a link out of SRC
            return candidate
    return None


def _files(root: Path) -> list[Path]:
    out = []
    for path in sorted(root.rglob("*")):
        rel_parts = path.relative_to(root).parts
        if any(p in _SKIPPED_DIRS or p.startswith(".") for p in rel_parts):
            continue
        if path.is_file() and not path.is_symlink() and path.suffix.lower() in MODEL_SUFFIXES:
            out.append(path)
    return out


def _write(dest: Path, files: dict[str, str]) -> None:
    try:
        for rel, text in files.items():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
    except OSError as e:
        raise ImportFailed(f"{dest}: cannot write: {e}") from e
