"""API views: parse input, call one console service or selector, render."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import generics, status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.throttling import AnonRateThrottle
from rest_framework.views import APIView

from console import job_kinds, selectors, services
from console.job_config import ConfigError
from console.models import JobStatus
from webapp.api.permissions import CanRunJobsOrReadOnly
from webapp.api.serializers import (
    JobCreateSerializer,
    JobDetailSerializer,
    JobKindSerializer,
    JobSerializer,
    UserSerializer,
)


class MeView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=UserSerializer)
    def get(self, request: Request) -> Response:
        return Response(UserSerializer(request.user).data)


class JobKindListView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=JobKindSerializer(many=True))
    def get(self, request: Request) -> Response:
        return Response(JobKindSerializer(job_kinds.all_kinds(), many=True).data)


class JobListCreateView(generics.ListAPIView):
    permission_classes = [CanRunJobsOrReadOnly]
    serializer_class = JobSerializer

    def get_queryset(self):
        params = self.request.query_params
        job_status = params.get("status", "")
        if job_status and job_status not in JobStatus.values:
            raise ValidationError({"status": [f"must be one of {', '.join(JobStatus.values)}."]})
        return selectors.job_list(
            user=self.request.user, status=job_status, kind=params.get("kind", ""),
            mine=params.get("mine", "") in ("1", "true"),
        )

    @extend_schema(request=JobCreateSerializer, responses={201: JobDetailSerializer})
    def post(self, request: Request) -> Response:
        body = JobCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            job = services.job_enqueue(
                kind=body.validated_data["kind"], config=body.validated_data["config"], created_by=request.user
            )
        except job_kinds.UnknownJobKind as exc:
            raise ValidationError({"kind": [str(exc)]}) from None
        except ConfigError as exc:
            raise ValidationError({"config": exc.errors}) from None
        return Response(JobDetailSerializer(job).data, status=status.HTTP_201_CREATED)


class JobDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=JobDetailSerializer)
    def get(self, request: Request, job_id: str) -> Response:
        job = selectors.job_get(job_id=job_id, user=request.user)
        return Response(JobDetailSerializer(job).data)


class JobCancelView(APIView):
    permission_classes = [CanRunJobsOrReadOnly]

    @extend_schema(request=None, responses=JobDetailSerializer)
    def post(self, request: Request, job_id: str) -> Response:
        job = selectors.job_get(job_id=job_id, user=request.user)
        try:
            job = services.job_cancel(job=job, by=request.user)
        except services.JobStateError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(JobDetailSerializer(job).data)


class TokenView(ObtainAuthToken):
    """Exchange a user name and password for an API token (throttled per client address)."""

    throttle_classes = [AnonRateThrottle]
