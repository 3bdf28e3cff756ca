"""The human console: records, writes (services), reads (selectors), pages and websocket consumers."""
