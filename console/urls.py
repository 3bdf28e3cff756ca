from __future__ import annotations

from django.urls import path

from console import views, views_review, views_training

app_name = "console"

urlpatterns = [
    path("", views.home, name="home"),
    path("jobs/", views.jobs, name="jobs"),
    path("jobs/start/", views.job_start, name="job-start"),
    path("jobs/<uuid:job_id>/", views.job_detail, name="job-detail"),
    path("jobs/<uuid:job_id>/cancel/", views.job_cancel, name="job-cancel"),
    # The data flywheel (console/views_review.py).
    path("review/tasks/", views_review.review_tasks, name="review-tasks"),
    path("review/trajectories/", views_review.review_trajectories, name="review-trajectories"),
    path("review/items/<str:item_id>/decide/", views_review.review_decide_view, name="review-decide"),
    path("review/items/<str:item_id>/renew/", views_review.review_renew_view, name="review-renew"),
    path("review/progress/", views_review.review_progress, name="review-progress"),
    path("review/log/", views_review.review_log_page, name="review-log"),
    path("trajectories/<str:trajectory_id>/", views_review.trajectory_view, name="trajectory-detail"),
    path("trajectories/<str:trajectory_id>/steps/<int:index>/screen.png", views_review.trajectory_screen,
         name="trajectory-screen"),
    path("rounds/", views_review.round_list, name="rounds"),
    path("rounds/start/", views_review.round_start, name="round-start"),
    path("rounds/<str:round_id>/", views_review.round_detail, name="round-detail"),
    path("rounds/<str:round_id>/weights/", views_review.round_weights, name="round-weights"),
    path("rounds/<str:round_id>/jobs/", views_review.round_job_start, name="round-job-start"),
    path("datasets/", views_review.dataset_list, name="datasets"),
    path("datasets/<str:dataset_id>/", views_review.dataset_detail, name="dataset-detail"),
    path("datasets/<str:dataset_id>/files/<path:name>", views_review.dataset_file, name="dataset-file"),
    # Training (console/views_training.py).
    path("training/", views_training.training_index, name="training"),
    path("training/start/", views_training.training_start_view, name="training-start"),
    path("training/compare.md", views_training.training_compare_markdown, name="training-compare-md"),
    path("training/compare.csv", views_training.training_compare_csv, name="training-compare-csv"),
    path("training/runs/<uuid:job_id>/metrics/", views_training.training_run_metrics, name="training-run-metrics"),
]
