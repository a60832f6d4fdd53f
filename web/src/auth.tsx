// Who is signed in (GET /auth/whoami), login and logout, per notes/auth-contract.
// A gantryd without the identity API (404 on /auth/whoami) is an open API: the UI then acts
// as an anonymous administrator and says so in the masthead.
import { createContext, useCallback, useContext, useEffect, useState, type ReactNode } from 'react';
import { ApiError, get, onUnauthorized, post, setCsrfToken } from './api/client';
import type { ProjectRole, WhoAmI } from './api/types';

export interface Auth {
  user: WhoAmI | null;           // null: not signed in
  loading: boolean;
  open: boolean;                 // the server has no identity API: nobody needs to sign in
  expired: boolean;              // the last session ended (401): the login screen says so
  login(username: string, password: string): Promise<void>;
  logout(): Promise<void>;
  forget(): void;                // the session ended already (log out everywhere): sign out here
  refresh(): Promise<void>;
  isAdmin: boolean;              // org-admin or paas-admin: every project, the admin screens
  roleIn(project: string): ProjectRole | 'admin' | undefined;
}

const AuthContext = createContext<Auth | null>(null);

export function AuthProvider({ children }: { children: ReactNode }) {
  const [user, setUser] = useState<WhoAmI | null>(null);
  const [loading, setLoading] = useState(true);
  const [open, setOpen] = useState(false);
  const [expired, setExpired] = useState(false);

  const refresh = useCallback(async () => {
    try {
      const me = await get<WhoAmI>('/auth/whoami');
      setCsrfToken(me.csrfToken ?? '');
      setUser({ ...me, projects: me.projects ?? {} });
      setOpen(false);
    } catch (err) {
      if (err instanceof ApiError && err.code === 404) {
        setOpen(true);
        setUser({ username: 'anonymous', displayName: 'No sign-in (open API)', orgRole: 'org-admin', projects: {} });
      } else {
        setUser(null);
      }
    } finally {
      setLoading(false);
    }
  }, []);

  useEffect(() => {
    void refresh();
  }, [refresh]);

  useEffect(() => {
    onUnauthorized(() => {
      setUser((u) => {
        if (u) setExpired(true);
        return null;
      });
      setCsrfToken('');
    });
    return () => onUnauthorized(null);
  }, []);

  const login = useCallback(async (username: string, password: string) => {
    await post('/auth/login', { username, password });
    setExpired(false);
    await refresh();
  }, [refresh]);

  const logout = useCallback(async () => {
    try { await post('/auth/logout', {}); } catch { /* already gone */ }
    setCsrfToken('');
    setUser(null);
  }, []);

  const forget = useCallback(() => {
    setCsrfToken('');
    setExpired(false);
    setUser(null);
  }, []);

  const isAdmin = !!user && (user.orgRole === 'org-admin' || user.orgRole === 'paas-admin');
  const roleIn = useCallback((project: string) => {
    if (!user) return undefined;
    if (user.orgRole === 'org-admin' || user.orgRole === 'paas-admin') return 'admin' as const;
    return user.projects[project];
  }, [user]);

  return (
    <AuthContext.Provider value={{ user, loading, open, expired, login, logout, forget, refresh, isAdmin, roleIn }}>
      {children}
    </AuthContext.Provider>
  );
}

export function useAuth(): Auth {
  const a = useContext(AuthContext);
  if (!a) throw new Error('useAuth outside AuthProvider');
  return a;
}
