-- A bundle's report_annotations are in the producer's order, which need not follow the reports'
-- (the Go original writes them as its database returns them). The import records each row's
-- place as its created_at, as it does for every table with rows of their own, and the export
-- writes annotations in that order, so a graph goes through kgs with its canonical hash intact.
ALTER TABLE report_annotations ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();
