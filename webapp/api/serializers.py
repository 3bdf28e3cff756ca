from __future__ import annotations

from rest_framework import serializers

from console.models import Job, User


class UserSerializer(serializers.ModelSerializer):
    can_run_jobs = serializers.BooleanField(read_only=True)

    class Meta:
        model = User
        fields = ["id", "username", "role", "is_superuser", "can_run_jobs"]
        read_only_fields = fields


class JobSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)
    url = serializers.CharField(source="get_absolute_url", read_only=True)

    class Meta:
        model = Job
        fields = [
            "id", "kind", "queue", "config", "status", "progress", "message", "attempts", "cancel_requested",
            "result", "error", "created_by", "created_at", "started_at", "finished_at", "heartbeat_at", "url",
        ]
        read_only_fields = fields


class JobDetailSerializer(JobSerializer):
    class Meta(JobSerializer.Meta):
        fields = [*JobSerializer.Meta.fields, "progress_history", "log_tail"]
        read_only_fields = fields


class JobCreateSerializer(serializers.Serializer):
    kind = serializers.CharField(max_length=64, help_text="a registered job kind, see /api/job-kinds/")
    config = serializers.JSONField(required=False, default=dict, help_text="the kind's typed config")


class JobKindSerializer(serializers.Serializer):
    name = serializers.CharField()
    title = serializers.CharField()
    description = serializers.CharField()
    queue = serializers.CharField()
    defaults = serializers.JSONField()
    fields = serializers.JSONField(source="field_help")
