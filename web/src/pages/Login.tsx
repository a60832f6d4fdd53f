import { useEffect, useState } from 'react';
import { ActionGroup, Alert, Button, Card, CardBody, CardTitle, Form, FormGroup, TextInput, Title, Text } from '@patternfly/react-core';
import { errorMessage } from '../api/client';
import { useAuth } from '../auth';

export function LoginPage() {
  const { login, expired } = useAuth();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  // Single sign-on (gantryd --oidc-issuer): GET /auth/oidc says whether it is configured.
  const [sso, setSso] = useState(false);
  useEffect(() => {
    let live = true;
    fetch('/auth/oidc', { headers: { Accept: 'application/json' } })
      .then((r) => (r.ok ? r.json() : { enabled: false }))
      .then((info) => { if (live) setSso(info?.enabled === true); })
      .catch(() => { /* no SSO button when the server cannot say */ });
    return () => { live = false; };
  }, []);
  const submit = async (e: React.FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      await login(username, password);
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main className="gantry-login">
      <Card style={{ width: 420 }}>
        <CardTitle>
          <Title headingLevel="h1" size="2xl">Gantry PaaS Studio</Title>
          <Text className="gantry-muted">Sign in to manage GPU compute.</Text>
        </CardTitle>
        <CardBody>
          {expired && !error && <Alert variant="info" isInline isPlain title="Your session ended. Sign in again." style={{ marginBottom: 16 }} />}
          {error && <Alert variant="danger" isInline title={error} data-testid="login-error" style={{ marginBottom: 16 }} />}
          <Form onSubmit={submit}>
            <FormGroup label="User name" isRequired fieldId="username">
              <TextInput id="username" name="username" autoComplete="username" isRequired value={username} onChange={(_e, v) => setUsername(v)} autoFocus />
            </FormGroup>
            <FormGroup label="Password" isRequired fieldId="password">
              <TextInput id="password" name="password" type="password" autoComplete="current-password" isRequired value={password} onChange={(_e, v) => setPassword(v)} />
            </FormGroup>
            <ActionGroup>
              <Button type="submit" variant="primary" isBlock isLoading={busy} isDisabled={busy || !username || !password}>Log in</Button>
            </ActionGroup>
          </Form>
          {sso && (
            <div style={{ marginTop: 16 }}>
              <Text className="gantry-muted" style={{ textAlign: 'center', marginBottom: 8 }}>or</Text>
              {/* A full page load: the provider's login page, then gantryd's callback. */}
              <Button component="a" href="/auth/oidc/login" variant="secondary" isBlock data-testid="sso-login">Log in with SSO</Button>
            </div>
          )}
        </CardBody>
      </Card>
    </main>
  );
}
