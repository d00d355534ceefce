-- Host: the id of the machine and user that recorded the event, so a
-- history gathered from several hosts tells them apart. Rows written
-- before it have none.
ALTER TABLE events ADD COLUMN host TEXT NOT NULL DEFAULT '';
