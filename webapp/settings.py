"""Flywheel's one settings module, driven by the environment (see docs/configuration.md).

With no DATABASE_URL / REDIS_URL the embedded PostgreSQL and Redis under FLYWHEEL_VAR_DIR are used;
``manage.py`` starts them on demand (webapp/embedded.py).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from webapp.embedded import EmbeddedServices
from webapp.env import envbool, envint, envlist, envstr, envurl

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = envbool("DEBUG", False)
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

EMBEDDED = EmbeddedServices.default()
VAR_DIR = EMBEDDED.var_dir


def _secret_key() -> str:
    """SECRET_KEY, or one generated once and kept in the var directory (never a shared default)."""
    key = envstr("SECRET_KEY", "").strip()
    if key:
        if len(key) < 50 or len(set(key)) < 5:
            raise ImproperlyConfigured("Environment variable SECRET_KEY is too weak: use 50+ random characters.")
        return key
    path = VAR_DIR / "secret_key"
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process won the race
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(secrets.token_urlsafe(64))
    return path.read_text().strip()


SECRET_KEY = _secret_key()
FLYWHEEL_DATA_DIR = Path(envstr("FLYWHEEL_DATA_DIR", "") or VAR_DIR / "data").resolve()
# How long a review claim holds a queue item for its reviewer; the open review page renews it.
FLYWHEEL_REVIEW_LEASE_SECONDS = envint("FLYWHEEL_REVIEW_LEASE_SECONDS", 300, minimum=10, maximum=86400)

DATABASE_URL = envurl("DATABASE_URL", ("postgres", "postgresql", "pgsql"))
DATABASE_EMBEDDED = not DATABASE_URL
REDIS_URL = envurl("REDIS_URL", ("redis", "rediss", "unix"))
REDIS_EMBEDDED = not REDIS_URL
REDIS_URL = REDIS_URL or EMBEDDED.redis.url()
CELERY_BROKER_URL = envurl("CELERY_BROKER_URL", ("redis", "rediss", "amqp", "amqps", "redis+socket")) or (
    f"redis+socket://{EMBEDDED.redis.socket_path}?virtual_host=0" if REDIS_EMBEDDED else REDIS_URL
)

DATABASES = {
    "default": dj_database_url.parse(
        DATABASE_URL or EMBEDDED.postgres.url(),
        conn_max_age=envint("DATABASE_CONN_MAX_AGE", 60, minimum=0),
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must point at PostgreSQL.")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "console",
    "workers",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "webapp.urls"
ASGI_APPLICATION = "webapp.asgi.application"
AUTH_USER_MODEL = "console.User"
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "console:jobs"
LOGOUT_REDIRECT_URL = "login"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # WhiteNoise warns on every request when it is missing
STATICFILES_DIRS = [BASE_DIR / "static"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # Without a collectstatic step WhiteNoise serves straight from the finders (WHITENOISE_USE_FINDERS).
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "flywheel",
    }
}
CHANNEL_LAYERS = {
    "default": {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {"hosts": [REDIS_URL], "prefix": "flywheel:asgi"},
    }
}

# Security: production values by default; `check --deploy` passes when DEBUG=false.
SESSION_COOKIE_SECURE = envbool("SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
SESSION_COOKIE_HTTPONLY = True
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = SECURE_HSTS_SECONDS > 0
SECURE_HSTS_PRELOAD = SECURE_HSTS_SECONDS > 0
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if envbool("TRUST_X_FORWARDED_PROTO", False) else None
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SILENCED_SYSTEM_CHECKS = [
    # TLS is terminated by the reverse proxy in front of Daphne; redirect and HSTS are the
    # proxy's decision (set SECURE_SSL_REDIRECT / SECURE_HSTS_SECONDS when Daphne faces clients).
    "security.W004",
    "security.W008",
]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: an anonymous API client is answered 401 with "WWW-Authenticate: Token".
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": envint("API_PAGE_SIZE", 50, minimum=1, maximum=1000),
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_THROTTLE_CLASSES": [
        "rest_framework.throttling.AnonRateThrottle",
        "rest_framework.throttling.UserRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "anon": envstr("API_THROTTLE_ANON", "60/minute"),
        "user": envstr("API_THROTTLE_USER", "2000/minute"),
    },
    "EXCEPTION_HANDLER": "webapp.api.errors.exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Flywheel API",
    "DESCRIPTION": "Jobs, users and the data flywheel (rounds, tasks, trajectories, review queues, the decision "
    "log, datasets) of the Flywheel console.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Several records have a "status"; name each choice set after its model.
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "console.models.JobStatus",
        "RoundStatusEnum": "console.models.RoundStatus",
        "TaskStatusEnum": "console.models.TaskStatus",
        "TrajectoryStatusEnum": "console.models.TrajectoryStatus",
        "ItemStatusEnum": "console.models.ItemStatus",
    },
}

# Celery (webapp/celery.py reads every CELERY_* name here).
CELERY_RESULT_BACKEND = (
    REDIS_URL.replace("unix://", "redis+socket://", 1) if REDIS_URL.startswith("unix://") else REDIS_URL
)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True  # results live in Job rows
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_TIME_LIMIT = envint("CELERY_TASK_TIME_LIMIT", 6 * 3600, minimum=1)
CELERY_TASK_SOFT_TIME_LIMIT = max(1, CELERY_TASK_TIME_LIMIT - 60)
CELERY_WORKER_CONCURRENCY = envint("CELERY_WORKER_CONCURRENCY", 2, minimum=1)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_TRANSPORT_OPTIONS = {
    # A message unacknowledged this long is redelivered; the job claim makes that harmless.
    "visibility_timeout": envint("CELERY_VISIBILITY_TIMEOUT", 4 * 3600, minimum=60),
}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False

# Jobs (workers/runner.py).
JOB_MAX_ATTEMPTS = envint("JOB_MAX_ATTEMPTS", 3, minimum=1, maximum=20)
JOB_STALE_AFTER_SECONDS = envint("JOB_STALE_AFTER_SECONDS", 60, minimum=2)
JOB_HEARTBEAT_SECONDS = max(1, JOB_STALE_AFTER_SECONDS // 4)
JOB_LOG_TAIL_CHARS = envint("JOB_LOG_TAIL_CHARS", 20_000, minimum=1000)
WORKER_HEARTBEAT_TTL_SECONDS = envint("WORKER_HEARTBEAT_TTL_SECONDS", 30, minimum=3)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": envstr("LOG_LEVEL", "INFO")},
    "loggers": {"daphne": {"level": "WARNING"}, "django.channels.server": {"level": "WARNING"}},
}
