"""The reproduction report (placeholder replaced below)."""
