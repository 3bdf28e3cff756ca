"""Reads of dataset versions: the listing, one version, and the exported files its manifest lists."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.db.models import QuerySet
from django.http import Http404

from console.models import DatasetVersion, User
from console.selectors.lookup import get_or_404

__all__ = ["dataset_file", "dataset_get", "dataset_list"]


def dataset_list(*, name: str = "") -> QuerySet[DatasetVersion]:
    """Dataset versions, newest first (optionally one dataset's versions)."""
    datasets = DatasetVersion.objects.select_related("created_by").order_by("-created_at")
    return datasets.filter(name=name) if name else datasets


def dataset_get(*, dataset_id: Any, user: User | None = None) -> DatasetVersion:
    """One dataset version (every signed-in role reads datasets), or Http404 for an unknown or malformed id."""
    return get_or_404(dataset_list(), dataset_id, "dataset version")


def dataset_file(*, version: DatasetVersion, path: str) -> Path:
    """The absolute path of one exported file of ``version``: only files its manifest lists and the
    checksums (``SHA256SUMS``), never anything else under the data folder; else Http404."""
    if path not in (version.files or {}) and path != "SHA256SUMS":
        raise Http404(f"{version} has no file {path!r}.")
    root = Path(settings.FLYWHEEL_DATA_DIR).resolve()
    folder = (root / version.export_dir.strip("/")).resolve()
    full = (folder / path).resolve()
    if not full.is_relative_to(folder) or not full.is_file():
        raise Http404(f"{version}'s file {path!r} is missing on disk.")
    return full
