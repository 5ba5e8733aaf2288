-- The roles each user holds now, read at every request: by membership, and by an elevation in
-- force (one past its end gives nothing, even before its end is recorded). A tenant may come
-- twice; the reader keeps the higher role. One definition for the queries that resolve a
-- session or a token to a principal in the same round trip, and for RolesOfUser.
CREATE VIEW roles_now AS
SELECT m.user_id, m.tenant_id, m.role
FROM memberships m JOIN tenants t ON t.id = m.tenant_id
WHERE t.deleted_at IS NULL
UNION ALL
SELECT e.user_id, e.tenant_id, e.role
FROM elevations e JOIN tenants t ON t.id = e.tenant_id
WHERE e.status = 'active' AND e.ends_at > now() AND t.deleted_at IS NULL;
