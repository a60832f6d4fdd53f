import { useCallback, useState } from 'react';
import { Alert, AlertActionCloseButton, AlertGroup } from '@patternfly/react-core';
import { errorMessage } from '../api/client';

type Toast = { id: number; variant: 'success' | 'danger' | 'info'; title: string };
let next = 1;

// Toasts for the outcome of an action: what the server accepted, or its refusal's message.
export function useToasts() {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const remove = (id: number) => setToasts((t) => t.filter((x) => x.id !== id));
  const add = useCallback((variant: Toast['variant'], title: string) => {
    const id = next++;
    setToasts((t) => [...t, { id, variant, title }]);
    if (variant !== 'danger') window.setTimeout(() => remove(id), 6000);
  }, []);
  const fail = useCallback((err: unknown) => add('danger', errorMessage(err)), [add]);
  const view = (
    <AlertGroup isToast isLiveRegion>
      {toasts.map((t) => (
        <Alert key={t.id} variant={t.variant} title={t.title} data-testid={t.variant === 'danger' ? 'api-error' : 'toast'}
          actionClose={<AlertActionCloseButton onClose={() => remove(t.id)} />} />
      ))}
    </AlertGroup>
  );
  return { view, add, fail };
}
