from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from console.models import Queue
from webapp.api import data_views, views

app_name = "api"

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    path("token/", views.TokenView.as_view(), name="token"),
    path("me/", views.MeView.as_view(), name="me"),
    path("job-kinds/", views.JobKindListView.as_view(), name="job-kinds"),
    path("jobs/", views.JobListCreateView.as_view(), name="jobs"),
    path("jobs/<str:job_id>/", views.JobDetailView.as_view(), name="job-detail"),
    path("jobs/<str:job_id>/cancel/", views.JobCancelView.as_view(), name="job-cancel"),
    # The data flywheel (webapp/api/data_views.py)
    path("rounds/", data_views.RoundListCreateView.as_view(), name="rounds"),
    path("rounds/<str:round_id>/", data_views.RoundDetailView.as_view(), name="round-detail"),
    path("rounds/<str:round_id>/weights/", data_views.RoundWeightsView.as_view(), name="round-weights"),
    path("tasks/", data_views.TaskListView.as_view(), name="tasks"),
    path("tasks/<str:task_id>/", data_views.TaskDetailView.as_view(), name="task-detail"),
    path("trajectories/", data_views.TrajectoryListView.as_view(), name="trajectories"),
    path("trajectories/<str:trajectory_id>/", data_views.TrajectoryDetailView.as_view(), name="trajectory-detail"),
    path("queue-items/<str:item_id>/", data_views.QueueItemDetailView.as_view(), name="queue-item"),
    path("queue-items/<str:item_id>/renew/", data_views.LeaseRenewView.as_view(), name="queue-item-renew"),
    path("queue-items/<str:item_id>/release/", data_views.ReleaseView.as_view(), name="queue-item-release"),
    path("queue-items/<str:item_id>/decide/", data_views.DecideView.as_view(), name="queue-item-decide"),
    path("reviews/", data_views.ReviewListView.as_view(), name="reviews"),
    path("reviews/<str:review_id>/", data_views.ReviewDetailView.as_view(), name="review-detail"),
    path("reason-codes/", data_views.ReasonCodeListView.as_view(), name="reason-codes"),
    path("datasets/", data_views.DatasetListView.as_view(), name="datasets"),
    path("datasets/<str:dataset_id>/", data_views.DatasetDetailView.as_view(), name="dataset-detail"),
]

# One literal route per queue (not <queue>), so each is a row of the role matrix in docs/roles.md.
for _queue in Queue.values:
    urlpatterns += [
        path(f"queues/{_queue}/claim-next/", data_views.ClaimNextView.as_view(queue=_queue),
             name=f"queue-{_queue}-claim-next"),
        path(f"queues/{_queue}/progress/", data_views.QueueProgressView.as_view(queue=_queue),
             name=f"queue-{_queue}-progress"),
        path(f"queues/{_queue}/agreement/", data_views.QueueAgreementView.as_view(queue=_queue),
             name=f"queue-{_queue}-agreement"),
    ]
