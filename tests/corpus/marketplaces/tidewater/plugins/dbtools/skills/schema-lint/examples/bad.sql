CREATE TABLE audit_events (at timestamptz, actor text);
ALTER TABLE orders ADD COLUMN status text NOT NULL;
