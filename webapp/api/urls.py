from __future__ import annotations

from django.urls import path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from webapp.api import views

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
]
