from __future__ import annotations

from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from console.models import Job, User


@admin.register(User)
class FlywheelUserAdmin(UserAdmin):
    list_display = ("username", "role", "is_superuser", "is_active", "last_login")
    list_filter = ("role", "is_superuser", "is_active")
    fieldsets = (*UserAdmin.fieldsets, ("Flywheel", {"fields": ("role",)}))


@admin.register(Job)
class JobAdmin(admin.ModelAdmin):
    list_display = ("id", "kind", "status", "progress", "attempts", "created_by", "created_at")
    list_filter = ("status", "kind")
    readonly_fields = [f.name for f in Job._meta.fields]
