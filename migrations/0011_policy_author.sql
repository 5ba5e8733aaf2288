-- Who made an approval policy decides who may remove it: a policy a provider admin set stands
-- against the tenant admins it binds, who may remove only the ones tenant admins made.
ALTER TABLE approval_policies ADD COLUMN by_provider_admin boolean NOT NULL DEFAULT false;

-- Only provider admins could set policies on landing zones and components. On environments,
-- the creator's standing today is the best record left; a policy whose creator is gone stays
-- removable by the environment's tenant admins, as it was.
UPDATE approval_policies p SET by_provider_admin = true
WHERE p.scope <> 'environment'
   OR EXISTS (SELECT 1 FROM users u WHERE u.id = p.created_by AND u.is_provider_admin);
