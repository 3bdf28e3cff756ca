"""``manage.py checkpoint import PATH``: register a checkpoint folder trained elsewhere; ``checkpoint list``.

A folder from ``bench/train_loop.py``, ``python -m ml.sft`` or another Flywheel instance becomes a registry
entry that managers can evaluate, continue (an SFT run's base checkpoint) or start RL from in the console.
Only the files a checkpoint is made of are copied into ``FLYWHEEL_DATA_DIR/checkpoints/imported/<id>/``:
safetensors weights, JSON configs, the tokenizer and the Flywheel card. Nothing pickled is read or
carried (a trainer state stays behind); the copy must load before it is registered.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from console.management.commands.job import is_uuid
from console.models import Checkpoint, CheckpointKind

CARRIED_SUFFIXES = (".safetensors", ".json", ".jinja", ".txt")


class Command(BaseCommand):
    help = "Import a checkpoint folder into the registry, or list the registry."

    def add_arguments(self, parser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        imp = sub.add_parser("import", help="copy a checkpoint folder into the data dir and register it")
        imp.add_argument("path", help="a checkpoint folder (model.safetensors, config.json, tokenizer)")
        imp.add_argument("--name", default="", help="registry name (default: the folder's name)")
        imp.add_argument("--kind", default="", choices=["", *CheckpointKind.values],
                         help="sft, grpo or care (default: the card's kind)")
        imp.add_argument("--parent", default="", help="the registered checkpoint it was trained from (an id)")
        sub.add_parser("list", help="the registry, newest first")

    def handle(self, *args, action: str, **options) -> None:
        getattr(self, f"_{action}")(**options)

    def _import(self, *, path: str, name: str, kind: str, parent: str, **_) -> None:
        from ml.model import load_checkpoint, n_params, read_card

        src = Path(path)
        if not src.is_dir():
            raise CommandError(f"{src} is not a folder.")
        missing = [f for f in ("model.safetensors", "config.json", "tokenizer.json") if not (src / f).is_file()]
        if missing:
            raise CommandError(f"{src} is not a checkpoint folder: it has no {', '.join(missing)} "
                               "(only safetensors weights are imported, never pickled ones).")
        card = read_card(src)
        kind = kind or str(card.get("kind") or "")
        if kind not in CheckpointKind.values:
            raise CommandError(f"Unknown checkpoint kind {kind!r} (the card says none): give --kind "
                               + " / ".join(CheckpointKind.values) + ".")
        parent_ckpt = None
        if parent:
            parent_ckpt = Checkpoint.objects.filter(id=parent).first() if is_uuid(parent) else None
            if parent_ckpt is None:
                raise CommandError(f"No registered checkpoint with id {parent!r}.")
        ckpt_id = uuid.uuid4()
        rel = Path("checkpoints") / "imported" / str(ckpt_id)
        dest = Path(settings.FLYWHEEL_DATA_DIR) / rel
        dest.mkdir(parents=True)
        try:
            for f in sorted(src.iterdir()):
                if f.is_file() and f.suffix in CARRIED_SUFFIXES:
                    shutil.copy2(f, dest / f.name)
            model, _ = load_checkpoint(dest)
        except Exception as exc:  # noqa: BLE001 -- whatever the loaders raise, the copy goes, unregistered
            shutil.rmtree(dest, ignore_errors=True)
            raise CommandError(f"{src} does not load as a model: {type(exc).__name__}: {exc}") from None
        ckpt = Checkpoint.objects.create(id=ckpt_id, name=(name or src.name)[:200], path=str(rel), kind=kind,
                                         parent=parent_ckpt, config=card.get("config") or {})
        self.stdout.write(f"Registered {kind} checkpoint {ckpt.id} ({ckpt.name}, {n_params(model):,} parameters) "
                          f"at {rel}")

    def _list(self, **_) -> None:
        for c in Checkpoint.objects.select_related("parent")[:100]:
            overall = (c.scores.get("mean") or {}).get("overall")
            score = f"overall {overall:.2f}" if isinstance(overall, int | float) else "not evaluated"
            parent = f"  from {c.parent.name}" if c.parent else ""
            self.stdout.write(f"{c.id}  {c.kind:<5} {c.name:<30} {score}{parent}")

