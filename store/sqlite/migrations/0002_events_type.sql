-- Events by type: a projection that folds one event type (the tool cache
-- folds ToolsListed) catches up by reading those rows only, so a new
-- session's startup does not grow with the history.
CREATE INDEX events_type ON events (type, seq);
