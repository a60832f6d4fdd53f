import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

// `npm run dev` proxies the API to a gantryd on 127.0.0.1:8080 (GANTRY_URL overrides).
const api = process.env.GANTRY_URL ?? 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', sourcemap: false, chunkSizeWarningLimit: 4096 },
  server: {
    proxy: {
      '/apis': api,
      '/auth': api,
      '/openapi': api,
      '/version': api,
    },
  },
});
