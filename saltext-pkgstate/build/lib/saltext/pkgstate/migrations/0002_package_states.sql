-- Package states, after the "Salt Package Installation" design: named states
-- whose every save is a new immutable revision of per-package entries,
-- assigned to organizations, groups, grain matches and minion lists; every
-- minion also has its own implicit state "minion:<id>". Assignments refer
-- to 0001's organization and server_group; resolution reads server and
-- server_group_member.

CREATE TABLE pkgstate (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name text NOT NULL UNIQUE,
    kind text NOT NULL CHECK (kind IN ('named', 'minion')),
    -- set for the implicit state of one minion, named 'minion:' || minion_id
    minion_id text UNIQUE,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT pkgstate_name_syntax CHECK (
        (kind = 'named' AND name ~ '^[a-z0-9][a-z0-9_.-]*$' AND minion_id IS NULL)
        OR (kind = 'minion' AND minion_id <> '' AND name = 'minion:' || minion_id)
    )
);

-- Each save is a new revision; revisions and their entries are never
-- updated or deleted (the triggers below refuse it).
CREATE TABLE pkgstate_revision (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    state_id integer NOT NULL REFERENCES pkgstate (id),
    revision integer NOT NULL CHECK (revision >= 1),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    author text,
    comment text,
    UNIQUE (state_id, revision)
);

-- One entry per package and revision: the primary key is what refuses two
-- entries for one package.
CREATE TABLE pkgstate_entry (
    revision_id bigint NOT NULL REFERENCES pkgstate_revision (id),
    package text NOT NULL CHECK (package <> ''),
    policy text NOT NULL
        CHECK (policy IN ('installed', 'latest', 'removed', 'purged', 'absent')),
    op text CHECK (op IN ('<', '<=', '=', '>=', '>')),
    version text CHECK (version <> ''),
    PRIMARY KEY (revision_id, package),
    CONSTRAINT pkgstate_entry_op_version CHECK ((op IS NULL) = (version IS NULL)),
    CONSTRAINT pkgstate_entry_op_policy CHECK (
        op IS NULL OR policy IN ('installed', 'absent')
    ),
    CONSTRAINT pkgstate_entry_absent_has_op CHECK (policy <> 'absent' OR op IS NOT NULL)
);

CREATE FUNCTION pkgstate_refuse_change() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: a package state revision is never changed; save a new revision instead',
        TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END
$$;

CREATE TRIGGER pkgstate_revision_immutable
    BEFORE UPDATE OR DELETE ON pkgstate_revision
    FOR EACH ROW EXECUTE FUNCTION pkgstate_refuse_change();
CREATE TRIGGER pkgstate_revision_no_truncate
    BEFORE TRUNCATE ON pkgstate_revision
    FOR EACH STATEMENT EXECUTE FUNCTION pkgstate_refuse_change();
CREATE TRIGGER pkgstate_entry_immutable
    BEFORE UPDATE OR DELETE ON pkgstate_entry
    FOR EACH ROW EXECUTE FUNCTION pkgstate_refuse_change();
CREATE TRIGGER pkgstate_entry_no_truncate
    BEFORE TRUNCATE ON pkgstate_entry
    FOR EACH STATEMENT EXECUTE FUNCTION pkgstate_refuse_change();

-- The current revision of every state: the highest one.
CREATE VIEW pkgstate_current AS
SELECT DISTINCT ON (r.state_id) r.state_id, r.id AS revision_id, r.revision, r.created_at
FROM pkgstate_revision r
ORDER BY r.state_id, r.revision DESC;

-- Where a named state applies: exactly one target per row. A minion list is
-- several rows with minion_id. The id orders grain-match and minion-list
-- assignments (and several states on one org or group).
CREATE TABLE pkgstate_assignment (
    id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    state_id integer NOT NULL REFERENCES pkgstate (id),
    org_id integer REFERENCES organization (id) ON DELETE CASCADE,
    group_id integer REFERENCES server_group (id) ON DELETE CASCADE,
    grain_match text CHECK (grain_match <> ''),
    minion_id text CHECK (minion_id <> ''),
    created_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT pkgstate_assignment_one_target
        CHECK (num_nonnulls(org_id, group_id, grain_match, minion_id) = 1)
);
CREATE UNIQUE INDEX pkgstate_assignment_org ON pkgstate_assignment (state_id, org_id)
    WHERE org_id IS NOT NULL;
CREATE UNIQUE INDEX pkgstate_assignment_group ON pkgstate_assignment (state_id, group_id)
    WHERE group_id IS NOT NULL;
CREATE UNIQUE INDEX pkgstate_assignment_grain ON pkgstate_assignment (state_id, grain_match)
    WHERE grain_match IS NOT NULL;
CREATE UNIQUE INDEX pkgstate_assignment_minion ON pkgstate_assignment (state_id, minion_id)
    WHERE minion_id IS NOT NULL;
CREATE INDEX pkgstate_assignment_minion_id ON pkgstate_assignment (minion_id)
    WHERE minion_id IS NOT NULL;

-- Every assign and unassign, kept: the assignment table holds only what
-- applies now.
CREATE TABLE pkgstate_assignment_log (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    changed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    action text NOT NULL CHECK (action IN ('assign', 'unassign')),
    state_name text NOT NULL,
    scope text NOT NULL CHECK (scope IN ('org', 'group', 'grain', 'minion')),
    target text NOT NULL,
    author text
);

-- A minion's installed packages as its last pkg.list_pkgs reported them
-- (name -> [versions]); "available" (name -> [candidate versions]) when
-- known, which is what tells a kept orphan from a managed package.
CREATE TABLE pkgstate_inventory (
    minion_id text PRIMARY KEY,
    packages jsonb NOT NULL CHECK (jsonb_typeof(packages) = 'object'),
    available jsonb CHECK (available IS NULL OR jsonb_typeof(available) = 'object'),
    refreshed_at timestamptz NOT NULL DEFAULT clock_timestamp()
);

-- Each state run that applied a minion's package state: the digest of the
-- resolved packages it applied, and those packages when the digest was the
-- current one at record time (what lets status tell pending packages).
CREATE TABLE pkgstate_applied (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    minion_id text NOT NULL,
    digest text NOT NULL,
    packages jsonb CHECK (packages IS NULL OR jsonb_typeof(packages) = 'object'),
    jid text,
    applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX pkgstate_applied_minion ON pkgstate_applied (minion_id, id DESC);
