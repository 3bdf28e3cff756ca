"""Serializers of the data flywheel's API: rounds, tasks, trajectories, review queues, the decision log,
reason codes and dataset versions. Output serializers only render; writes go through the services, and
the input serializers below only parse a request body for them."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from console.models import (
    DatasetVersion,
    Decision,
    QueueItem,
    ReasonCode,
    Review,
    Round,
    TaskSpec,
    Trajectory,
    TrajectoryStep,
)
from console.selectors.review import round_funnel


class RoundSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Round
        fields = [
            "id", "number", "name", "status", "generation_weights", "suggested_weights", "config", "created_by",
            "created_at",
        ]


class FunnelSerializer(serializers.Serializer):
    generated = serializers.IntegerField()
    validated = serializers.IntegerField()
    approved = serializers.IntegerField()
    collected = serializers.IntegerField()
    accepted = serializers.IntegerField()
    in_dataset = serializers.IntegerField()


class RoundDetailSerializer(RoundSerializer):
    funnel = serializers.SerializerMethodField()

    class Meta(RoundSerializer.Meta):
        fields = [*RoundSerializer.Meta.fields, "funnel"]

    def get_funnel(self, obj: Round) -> dict[str, int]:
        return FunnelSerializer(round_funnel(round=obj)).data


class RoundCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)
    generation_weights = serializers.JSONField(
        required=False, default=dict, help_text='{"category"|"domain"|"difficulty": {name: weight >= 0}}'
    )
    config = serializers.JSONField(required=False, default=dict, help_text='e.g. {"overlap": 2}')

    def validate_generation_weights(self, value: Any) -> Any:
        if not isinstance(value, dict):
            raise serializers.ValidationError('must be an object like {"category": {"memory": 2}}.')
        return value

    def validate_config(self, value: Any) -> Any:
        if not isinstance(value, dict):
            raise serializers.ValidationError("must be a JSON object.")
        overlap = value.get("overlap", 1)
        if isinstance(overlap, bool) or not isinstance(overlap, int) or not 1 <= overlap <= 20:
            raise serializers.ValidationError("overlap must be a whole number from 1 to 20.")
        return value


class RoundWeightsSerializer(serializers.Serializer):
    weights = serializers.JSONField(help_text='{"category"|"domain"|"difficulty": {name: weight >= 0}}')


class TaskSpecSerializer(serializers.ModelSerializer):
    class Meta:
        model = TaskSpec
        fields = [
            "id", "round", "template", "category", "domains", "tags", "difficulty", "seed", "instruction", "source",
            "status", "priority", "created_at", "updated_at",
        ]


class TaskSpecDetailSerializer(TaskSpecSerializer):
    class Meta(TaskSpecSerializer.Meta):
        fields = [*TaskSpecSerializer.Meta.fields, "spec", "validation", "param_hash", "state_hash"]


class TrajectoryStepSerializer(serializers.ModelSerializer):
    class Meta:
        model = TrajectoryStep
        fields = ["index", "data", "screen", "label", "comment"]


class TrajectorySerializer(serializers.ModelSerializer):
    template = serializers.CharField(source="task.template", read_only=True)
    instruction = serializers.CharField(source="task.instruction", read_only=True)

    class Meta:
        model = Trajectory
        fields = [
            "id", "task", "round", "job", "attempt", "template", "instruction", "planner", "environment", "success",
            "progress", "reason", "output_tokens", "reasoning_tokens", "tool_calls", "costs", "n_steps", "status",
            "created_at",
        ]


class TrajectoryDetailSerializer(TrajectorySerializer):
    steps = TrajectoryStepSerializer(many=True, read_only=True)

    class Meta(TrajectorySerializer.Meta):
        fields = [*TrajectorySerializer.Meta.fields, "episode", "steps"]


class QueueItemSerializer(serializers.ModelSerializer):
    claimed_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = QueueItem
        fields = [
            "id", "queue", "round", "task", "trajectory", "slot", "priority", "status", "claimed_by",
            "lease_expires_at", "created_at",
        ]


class ClaimSerializer(serializers.Serializer):
    """A claimed slot with the object to review (the task, or the trajectory with its steps)."""

    item = QueueItemSerializer()
    lease_seconds = serializers.IntegerField()
    task = TaskSpecDetailSerializer(allow_null=True)
    trajectory = TrajectoryDetailSerializer(allow_null=True)


class ClaimRequestSerializer(serializers.Serializer):
    round = serializers.UUIDField(required=False, allow_null=True, help_text="only items of this round")


class DecideSerializer(serializers.Serializer):
    decision = serializers.ChoiceField(
        choices=[Decision.APPROVE, Decision.REJECT, Decision.EDIT, Decision.SKIP, Decision.LABEL]
    )
    reason_code = serializers.CharField(max_length=40, required=False, default="", allow_blank=True)
    comment = serializers.CharField(
        max_length=10000, required=False, default="", allow_blank=True, trim_whitespace=False
    )
    edit = serializers.JSONField(
        required=False, allow_null=True, default=None,
        help_text='task edits: {"instruction": "...", "goal": {path: value}, "setup": {path: value}}',
    )
    step_labels = serializers.JSONField(
        required=False, allow_null=True, default=None,
        help_text='trajectory step labels: [{"index": 0, "label": "correct|erroneous|recovery", "comment": "..."}]',
    )


class ReviewSerializer(serializers.ModelSerializer):
    reviewer = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Review
        fields = [
            "id", "queue", "item", "task", "trajectory", "reviewer", "gate", "decision", "reason_code", "comment",
            "before", "after", "created_at",
        ]


class ReasonCodeSerializer(serializers.ModelSerializer):
    class Meta:
        model = ReasonCode
        fields = ["queue", "code", "label", "position", "active"]


class DatasetVersionSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = DatasetVersion
        fields = [
            "id", "name", "version", "rounds", "job", "config", "stats", "files", "export_dir", "created_by",
            "created_at",
        ]


class DatasetVersionDetailSerializer(DatasetVersionSerializer):
    class Meta(DatasetVersionSerializer.Meta):
        fields = [*DatasetVersionSerializer.Meta.fields, "manifest"]


class QueueProgressSerializer(serializers.Serializer):
    queue = serializers.CharField()
    round = serializers.CharField(allow_null=True)
    total = serializers.IntegerField()
    pending = serializers.IntegerField()
    claimed = serializers.IntegerField()
    done = serializers.IntegerField()
    objects = serializers.IntegerField()
    objects_decided = serializers.IntegerField()
    annotators = serializers.JSONField()


class AgreementSerializer(serializers.Serializer):
    queue = serializers.CharField()
    kappa = serializers.FloatField(allow_null=True)
    pairs = serializers.JSONField()
    annotators = serializers.IntegerField()
    objects_with_overlap = serializers.IntegerField()
