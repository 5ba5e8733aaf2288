-- A search of the inventory by address or name (issue 36, at a million items). pg_trgm splits
-- text into words at every character other than a letter or digit, so the trigrams of
-- "10.0.31.7" are those of "10", "0", "31" and "7", held by nearly every item: the index read
-- most of itself to answer one address. Indexed without the separators addresses, host names
-- and names carry ("100317", "srv3177"), the trigrams are the item's own. A search matches the
-- same items as before: the query asks both for the term without separators here and for the
-- term itself in search, and the first holds wherever the second does.
DROP INDEX inventory_items_search_idx;
CREATE INDEX inventory_items_words_idx ON inventory_items USING gin (translate(search, '.-:/', '') gin_trgm_ops);
