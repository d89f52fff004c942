package domain

import (
	"regexp"
	"time"
)

var projectKeyRe = regexp.MustCompile(`^[A-Z][A-Z0-9]{1,9}$`)

// Project groups tasks. Key is unique in the workspace and fixed after
// creation. TaskCount counts the project's tasks, archived included, and
// StatusCounts the same tasks by status.
type Project struct {
	ID           string
	WorkspaceID  string
	Name         string
	Key          string
	TaskCount    int
	StatusCounts StatusCounts
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// ProjectFields are a project's fields as a request carries them,
// unvalidated: NewProject takes them for a creation (both required) and
// Project.Apply for a merge patch (the key is fixed after creation).
type ProjectFields struct {
	Name Field[string]
	Key  Field[string]
}

// NewProject validates a project about to be created.
func NewProject(id, workspaceID string, in ProjectFields, now time.Time) (Project, error) {
	name, err := mandatory("name", in.Name)
	if err != nil {
		return Project{}, err
	}
	key, err := mandatory("key", in.Key)
	if err != nil {
		return Project{}, err
	}
	if name, err = cleanName("name", name, 200); err != nil {
		return Project{}, err
	}
	if !projectKeyRe.MatchString(key) {
		return Project{}, Invalid("key", "Must be 2-10 characters: an uppercase letter, then uppercase letters or digits.")
	}
	now = Timestamp(now)
	return Project{ID: id, WorkspaceID: workspaceID, Name: name, Key: key, CreatedAt: now, UpdatedAt: now}, nil
}

// Apply returns the project with patch applied and what changed. A patch that
// changes nothing returns the project untouched (updated_at included).
func (p Project) Apply(patch ProjectFields, now time.Time) (Project, Changes, error) {
	if patch.Key.Present {
		return p, nil, Invalid("key", "Is fixed after creation.")
	}
	var changes Changes
	if patch.Name.Present {
		v, err := required("name", patch.Name)
		if err != nil {
			return p, nil, err
		}
		name, err := cleanName("name", v, 200)
		if err != nil {
			return p, nil, err
		}
		if name != p.Name {
			changes = append(changes, Change{Field: "name", Old: p.Name})
			p.Name = name
		}
	}
	if len(changes) > 0 {
		p.UpdatedAt = Timestamp(now)
	}
	return p, changes, nil
}
