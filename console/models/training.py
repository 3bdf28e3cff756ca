"""Training records: the checkpoint registry with lineage (dataset, parent checkpoint, config, scores).

A training run is a Job of kind ``train.sft`` / ``train.care`` (whose result holds its metrics); an
evaluation run is a Job of kind ``train.evaluate`` whose result holds the report, copied into the
evaluated checkpoint's ``scores``.
"""

from __future__ import annotations

import uuid

from django.db import models


class CheckpointKind(models.TextChoices):
    SFT = "sft", "SFT"
    CARE = "care", "CARE"
    GRPO = "grpo", "GRPO"


class Checkpoint(models.Model):
    """A saved model folder under ``FLYWHEEL_DATA_DIR/checkpoints/`` (``path`` is relative to the data dir)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    name = models.CharField(max_length=200)
    path = models.CharField(max_length=500)
    kind = models.CharField(max_length=8, choices=CheckpointKind.choices)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT, related_name="children")
    dataset = models.ForeignKey("console.DatasetVersion", null=True, blank=True, on_delete=models.PROTECT,
                                related_name="+")
    job = models.OneToOneField("console.Job", null=True, blank=True, on_delete=models.PROTECT,
                               related_name="checkpoint")
    config = models.JSONField(default=dict)
    scores = models.JSONField(default=dict)  # {"mean": {...}, "std": {...}, "job": eval job id, ...}
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name
