"""API views of the data flywheel: parse input, call one service or selector of console.services /
console.selectors ``review`` and ``datasets`` (and ``rounds`` for starting rounds), render.

The decision log (``/api/reviews/``) is read-only: it has no PUT, PATCH or DELETE (405), and a decision is
made only through ``/api/queue-items/<id>/decide/``, which appends one Review. The services' own exceptions
(a refused role, a lost lease, a decision to fix) become 403 / 409 / 400 in ``errors.exception_handler``.
"""

from __future__ import annotations

import uuid
from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import generics, status
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from console.models import Decision, Gate, Queue, QueueItem, TaskStatus, TrajectoryStatus
from console.selectors import datasets as dataset_selectors
from console.selectors import review as selectors
from console.services import review as review_services
from console.services.rounds import round_create, round_weights_set
from webapp.api.data_serializers import (
    AgreementSerializer,
    ClaimRequestSerializer,
    ClaimSerializer,
    DatasetVersionDetailSerializer,
    DatasetVersionSerializer,
    DecideSerializer,
    QueueItemSerializer,
    QueueProgressSerializer,
    ReasonCodeSerializer,
    ReviewSerializer,
    RoundCreateSerializer,
    RoundDetailSerializer,
    RoundSerializer,
    RoundWeightsSerializer,
    TaskSpecDetailSerializer,
    TaskSpecSerializer,
    TrajectoryDetailSerializer,
    TrajectorySerializer,
)
from webapp.api.permissions import CanManageRoundsOrReadOnly, CanReviewOrReadOnly

CONFLICT = {409: OpenApiResponse(description="the lease is not (or no longer) yours; nothing was saved")}


def _choice(request: Request, name: str, choices: list[str]) -> str:
    value = request.query_params.get(name, "")
    if value and value not in choices:
        raise ValidationError({name: [f"must be one of {', '.join(choices)}."]})
    return value


def _uuid(request: Request, name: str) -> uuid.UUID | None:
    value = request.query_params.get(name, "")
    if not value:
        return None
    try:
        return uuid.UUID(value)
    except ValueError:
        raise ValidationError({name: [f"{value!r} is not an id (a UUID)."]}) from None


def _round(request: Request) -> Any:
    round_id = _uuid(request, "round")
    return selectors.round_get(round_id=round_id) if round_id else None


# ---------------------------------------------------------------------------------------------
# Rounds


class RoundListCreateView(generics.ListAPIView):
    permission_classes = [CanManageRoundsOrReadOnly]
    serializer_class = RoundSerializer

    def get_queryset(self):
        return selectors.round_list()

    @extend_schema(request=RoundCreateSerializer, responses={201: RoundDetailSerializer})
    def post(self, request: Request) -> Response:
        body = RoundCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            created = round_create(user=request.user, **body.validated_data)
        except ValueError as exc:
            raise ValidationError({"generation_weights": [str(exc)]}) from None
        return Response(RoundDetailSerializer(created).data, status=status.HTTP_201_CREATED)


class RoundDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=RoundDetailSerializer)
    def get(self, request: Request, round_id: str) -> Response:
        found = selectors.round_get(round_id=round_id, user=request.user)
        return Response(RoundDetailSerializer(found).data)


class RoundWeightsView(APIView):
    """Set the round's generation weights (managers), e.g. after editing what the feedback job suggested."""

    permission_classes = [CanManageRoundsOrReadOnly]

    @extend_schema(request=RoundWeightsSerializer, responses=RoundDetailSerializer)
    def post(self, request: Request, round_id: str) -> Response:
        found = selectors.round_get(round_id=round_id, user=request.user)
        body = RoundWeightsSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        try:
            updated = round_weights_set(round=found, weights=body.validated_data["weights"], user=request.user)
        except ValueError as exc:
            raise ValidationError({"weights": [str(exc)]}) from None
        return Response(RoundDetailSerializer(updated).data)


# ---------------------------------------------------------------------------------------------
# Tasks and trajectories


class TaskListView(generics.ListAPIView):
    permission_classes = [IsAuthenticated]
    serializer_class = TaskSpecSerializer

    @extend_schema(parameters=[OpenApiParameter("round"), OpenApiParameter("status", enum=TaskStatus.values),
                               OpenApiParameter("template")])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        request = self.request
        return selectors.task_list(
            round=_round(request), status=_choice(request, "status", TaskStatus.values),
            template=request.query_params.get("template", ""),
        )


class TaskDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=TaskSpecDetailSerializer)
    def get(self, request: Request, task_id: str) -> Response:
        return Response(TaskSpecDetailSerializer(selectors.task_detail(task_id=task_id, user=request.user)).data)


class TrajectoryListView(generics.ListAPIView):
    permission_classes = [IsAuthenticated]
    serializer_class = TrajectorySerializer

    @extend_schema(parameters=[OpenApiParameter("round"), OpenApiParameter("task"),
                               OpenApiParameter("status", enum=TrajectoryStatus.values)])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        request = self.request
        task_id = _uuid(request, "task")
        return selectors.trajectory_list(
            round=_round(request), status=_choice(request, "status", TrajectoryStatus.values),
            task=selectors.task_detail(task_id=task_id) if task_id else None,
        )


class TrajectoryDetailView(APIView):
    """A trajectory with every step: the turn, tool calls and results, verification, notices, state diff."""

    permission_classes = [IsAuthenticated]

    @extend_schema(responses=TrajectoryDetailSerializer)
    def get(self, request: Request, trajectory_id: str) -> Response:
        found = selectors.trajectory_detail(trajectory_id=trajectory_id, user=request.user)
        return Response(TrajectoryDetailSerializer(found).data)


# ---------------------------------------------------------------------------------------------
# Queues: claim-next, lease, decide, progress, agreement


def _claim_payload(item: QueueItem) -> dict[str, Any]:
    task = trajectory = None
    if item.queue == Queue.TASK:
        task = TaskSpecDetailSerializer(selectors.task_detail(task_id=item.task_id)).data
    else:
        trajectory = TrajectoryDetailSerializer(selectors.trajectory_detail(trajectory_id=item.trajectory_id)).data
    return {
        "item": QueueItemSerializer(item).data,
        "lease_seconds": review_services.lease_seconds(),
        "task": task,
        "trajectory": trajectory,
    }


class ClaimNextView(APIView):
    """Claim the next item of this queue (or get back the one you hold); 204 when nothing is left for you."""

    permission_classes = [CanReviewOrReadOnly]
    queue: str = Queue.TASK  # set per route

    @extend_schema(request=ClaimRequestSerializer, responses={200: ClaimSerializer, 204: None})
    def post(self, request: Request) -> Response:
        body = ClaimRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        round_id = body.validated_data.get("round")
        found = selectors.round_get(round_id=round_id) if round_id else None
        item = review_services.review_claim_next(queue=self.queue, user=request.user, round=found)
        if item is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(_claim_payload(item))


class QueueProgressView(APIView):
    permission_classes = [IsAuthenticated]
    queue: str = Queue.TASK

    @extend_schema(parameters=[OpenApiParameter("round")], responses=QueueProgressSerializer)
    def get(self, request: Request) -> Response:
        progress = selectors.review_queue_progress(queue=self.queue, round=_round(request))
        return Response(QueueProgressSerializer(progress).data)


class QueueAgreementView(APIView):
    """Cohen's κ per pair of reviewers (objects both decided, approve vs reject) and for the queue."""

    permission_classes = [IsAuthenticated]
    queue: str = Queue.TASK

    @extend_schema(parameters=[OpenApiParameter("round")], responses=AgreementSerializer)
    def get(self, request: Request) -> Response:
        agreement = selectors.review_agreement(queue=self.queue, round=_round(request))
        return Response(AgreementSerializer(agreement).data)


class QueueItemDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=QueueItemSerializer)
    def get(self, request: Request, item_id: str) -> Response:
        item = selectors.queue_item_get(item_id=item_id, user=request.user)
        return Response(QueueItemSerializer(item).data)


class LeaseRenewView(APIView):
    """Extend your lease on a claimed item (the open review page calls this while you work)."""

    permission_classes = [CanReviewOrReadOnly]

    @extend_schema(request=None, responses={200: QueueItemSerializer, **CONFLICT})
    def post(self, request: Request, item_id: str) -> Response:
        item = selectors.queue_item_get(item_id=item_id, user=request.user)
        item = review_services.review_lease_renew(item=item, user=request.user)
        return Response(QueueItemSerializer(item).data)


class ReleaseView(APIView):
    """Give a claimed item back to the queue without deciding."""

    permission_classes = [CanReviewOrReadOnly]

    @extend_schema(request=None, responses={200: None, **CONFLICT})
    def post(self, request: Request, item_id: str) -> Response:
        item = selectors.queue_item_get(item_id=item_id, user=request.user)
        review_services.review_release(item=item, user=request.user)
        return Response({"detail": "Released: the item is back in the queue."})


class DecideView(APIView):
    """Decide your claimed item: approve, reject (with a reason code), edit (tasks), skip, label (steps).

    Appends one Review to the decision log. 409 when the lease is not yours (never claimed, decided, or
    reclaimed by someone else after it expired); 400 with a message for anything to fix in the request.
    """

    permission_classes = [CanReviewOrReadOnly]

    @extend_schema(request=DecideSerializer, responses={201: ReviewSerializer, **CONFLICT})
    def post(self, request: Request, item_id: str) -> Response:
        item = selectors.queue_item_get(item_id=item_id, user=request.user)
        body = DecideSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        review = review_services.review_decide(item=item, user=request.user, **body.validated_data)
        return Response(ReviewSerializer(review).data, status=status.HTTP_201_CREATED)


# ---------------------------------------------------------------------------------------------
# The decision log, reason codes, datasets


class ReviewListView(generics.ListAPIView):
    """The decision log, newest first. Read-only: decisions are appended through decide, never changed."""

    permission_classes = [IsAuthenticated]
    serializer_class = ReviewSerializer

    @extend_schema(parameters=[
        OpenApiParameter("queue", enum=Queue.values), OpenApiParameter("reviewer"), OpenApiParameter("task"),
        OpenApiParameter("trajectory"), OpenApiParameter("gate", enum=Gate.values),
        OpenApiParameter("decision", enum=Decision.values),
    ])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        request = self.request
        return selectors.review_log(
            queue=_choice(request, "queue", Queue.values), reviewer=request.query_params.get("reviewer", ""),
            task=_uuid(request, "task"), trajectory=_uuid(request, "trajectory"),
            gate=_choice(request, "gate", Gate.values), decision=_choice(request, "decision", Decision.values),
        )


class ReviewDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=ReviewSerializer)
    def get(self, request: Request, review_id: str) -> Response:
        return Response(ReviewSerializer(selectors.review_get(review_id=review_id, user=request.user)).data)


class ReasonCodeListView(generics.ListAPIView):
    """The active reject reasons of each queue, in the order keys 1–9 pick them."""

    permission_classes = [IsAuthenticated]
    serializer_class = ReasonCodeSerializer
    pagination_class = None

    @extend_schema(parameters=[OpenApiParameter("queue", enum=Queue.values)])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return selectors.reason_code_list(queue=_choice(self.request, "queue", Queue.values))


class DatasetListView(generics.ListAPIView):
    permission_classes = [IsAuthenticated]
    serializer_class = DatasetVersionSerializer

    @extend_schema(parameters=[OpenApiParameter("name")])
    def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().get(request, *args, **kwargs)

    def get_queryset(self):
        return dataset_selectors.dataset_list(name=self.request.query_params.get("name", ""))


class DatasetDetailView(APIView):
    permission_classes = [IsAuthenticated]

    @extend_schema(responses=DatasetVersionDetailSerializer)
    def get(self, request: Request, dataset_id: str) -> Response:
        found = dataset_selectors.dataset_get(dataset_id=dataset_id, user=request.user)
        return Response(DatasetVersionDetailSerializer(found).data)
