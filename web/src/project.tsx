// The projects the signed-in user can see, and the current one (from the URL, else the last used).
import { useEffect, useState } from 'react';
import { useParams } from 'react-router-dom';
import { ApiError, collectionPath, get } from './api/client';
import type { List, Project } from './api/types';
import { useAuth } from './auth';

const KEY = 'gantry.project';

export function rememberProject(p: string) {
  try { localStorage.setItem(KEY, p); } catch { /* private mode */ }
}
export function lastProject(): string {
  try { return localStorage.getItem(KEY) ?? ''; } catch { return ''; }
}

export function useProjects(): { projects: Project[]; error: unknown; reload: () => void } {
  const { user } = useAuth();
  const [projects, setProjects] = useState<Project[]>([]);
  const [error, setError] = useState<unknown>(null);
  const [n, setN] = useState(0);
  useEffect(() => {
    if (!user) return;
    get<List<Project>>(collectionPath('projects'))
      .then((l) => { setProjects(l.items); setError(null); })
      .catch((e) => {
        // A member may not list projects: fall back to the ones whoami names.
        if (e instanceof ApiError && e.code === 403) {
          setProjects(Object.keys(user.projects).map((name) => ({ metadata: { name } }) as Project));
        } else {
          setError(e);
        }
      });
  }, [user, n]);
  return { projects, error, reload: () => setN((x) => x + 1) };
}

export function useCurrentProject(): string {
  const { project } = useParams();
  useEffect(() => { if (project) rememberProject(project); }, [project]);
  return project ?? lastProject();
}
