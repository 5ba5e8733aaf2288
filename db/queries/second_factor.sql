-- name: GetTOTP :one
SELECT * FROM user_totp WHERE user_id = $1;

-- name: TOTPEnabled :one
SELECT EXISTS (SELECT 1 FROM user_totp WHERE user_id = $1 AND enabled_at IS NOT NULL);

-- name: StartTOTP :execrows
-- A new secret replaces an enrolment not finished; one already on stays.
INSERT INTO user_totp (user_id, secret, secret_key_id) VALUES ($1, $2, $3)
ON CONFLICT (user_id) DO UPDATE SET secret = EXCLUDED.secret, secret_key_id = EXCLUDED.secret_key_id, last_step = 0, updated_at = now()
WHERE user_totp.enabled_at IS NULL;

-- name: EnableTOTP :exec
UPDATE user_totp SET enabled_at = now(), updated_at = now() WHERE user_id = $1;

-- name: TakeTOTPStep :execrows
-- A code counts once: only a step later than the last one taken moves it on.
UPDATE user_totp SET last_step = sqlc.arg(step), updated_at = now() WHERE user_id = sqlc.arg(user_id) AND last_step < sqlc.arg(step);

-- name: DeleteTOTP :execrows
DELETE FROM user_totp WHERE user_id = $1;

-- name: AddRecoveryCode :exec
INSERT INTO recovery_codes (user_id, code_hash) VALUES ($1, $2);

-- name: DeleteRecoveryCodes :exec
DELETE FROM recovery_codes WHERE user_id = $1;

-- name: UseRecoveryCode :execrows
UPDATE recovery_codes SET used_at = now(), updated_at = now() WHERE user_id = $1 AND code_hash = $2 AND used_at IS NULL;

-- name: CountRecoveryCodes :one
SELECT count(*) FROM recovery_codes WHERE user_id = $1 AND used_at IS NULL;

-- name: StartSecondFactorLogin :exec
INSERT INTO second_factor_logins (binding_hash, user_id, expires_at) VALUES ($1, $2, $3);

-- name: TrySecondFactorLogin :one
-- Each try is counted before its code is checked, so that parallel guesses cannot all slip
-- under the limit; a sign-in out of tries or time is not found.
UPDATE second_factor_logins SET attempts = attempts + 1, updated_at = now()
WHERE binding_hash = sqlc.arg(binding_hash) AND attempts < sqlc.arg(max_attempts) AND expires_at > sqlc.arg(now)
RETURNING user_id, attempts;

-- name: EndSecondFactorLogin :exec
DELETE FROM second_factor_logins WHERE binding_hash = $1;

-- name: EndUserSecondFactorLogins :exec
DELETE FROM second_factor_logins WHERE user_id = $1;

-- name: DeleteExpiredSecondFactorLogins :execrows
DELETE FROM second_factor_logins WHERE expires_at <= now();

-- name: EndEnrolOnlySessions :exec
-- The factor is on: the user's sessions that could only enrol may now do everything.
UPDATE sessions SET enrol_only = false WHERE user_id = $1 AND enrol_only;

-- name: GetSecondFactorLogin :one
SELECT * FROM second_factor_logins
WHERE binding_hash = sqlc.arg(binding_hash) AND attempts < sqlc.arg(max_attempts) AND expires_at > sqlc.arg(now);

-- name: AddSecurityKey :exec
INSERT INTO security_keys (user_id, credential_id, credential, name) VALUES ($1, $2, $3, $4);

-- name: ListSecurityKeys :many
SELECT * FROM security_keys WHERE user_id = $1 ORDER BY created_at;

-- name: UseSecurityKey :exec
-- A sign-in moves the key's signature count on, which is how a cloned key shows itself.
UPDATE security_keys SET credential = $3, last_used_at = now(), updated_at = now() WHERE user_id = $1 AND credential_id = $2;

-- name: DeleteSecurityKeys :exec
DELETE FROM security_keys WHERE user_id = $1;

-- name: StartCeremony :exec
INSERT INTO webauthn_ceremonies (key_hash, user_id, session, expires_at) VALUES ($1, $2, $3, $4)
ON CONFLICT (key_hash) DO UPDATE SET user_id = EXCLUDED.user_id, session = EXCLUDED.session, expires_at = EXCLUDED.expires_at, updated_at = now();

-- name: TakeCeremony :one
DELETE FROM webauthn_ceremonies WHERE key_hash = $1 RETURNING *;

-- name: DeleteExpiredCeremonies :execrows
DELETE FROM webauthn_ceremonies WHERE expires_at <= now();
