-- The summaries that cover a fact (GET facts/{id}/citations) found through the index instead of
-- by reading every summary: covered_fact_ids @> ARRAY[fact].
CREATE INDEX concept_summaries_covered_fact_ids ON concept_summaries USING gin (covered_fact_ids);
