from __future__ import annotations

from django.urls import path

from console import views

app_name = "console"

urlpatterns = [
    path("", views.home, name="home"),
    path("jobs/", views.jobs, name="jobs"),
    path("jobs/start/", views.job_start, name="job-start"),
    path("jobs/<uuid:job_id>/", views.job_detail, name="job-detail"),
    path("jobs/<uuid:job_id>/cancel/", views.job_cancel, name="job-cancel"),
]
