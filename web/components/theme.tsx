import { useEffect, useId, useState } from 'react'
import { rememberView } from '../first-view'
import { t } from '../i18n'

/**
 * The colour theme: the system's setting unless the user picks light or dark; the choice
 * is kept in this browser. `<html data-theme>` holds the theme in effect, which app.css colours by.
 */
export type ThemeChoice = 'system' | 'light' | 'dark'
const KEY = 'mailctl.theme'
const dark = () => matchMedia('(prefers-color-scheme: dark)')

export function themeChoice(): ThemeChoice {
  const v = localStorage.getItem(KEY)
  return v === 'light' || v === 'dark' ? v : 'system'
}

export function applyTheme(choice: ThemeChoice = themeChoice()): void {
  const effective = choice === 'system' ? (dark().matches ? 'dark' : 'light') : choice
  document.documentElement.dataset.theme = effective
  rememberView('mailctl_view_theme', `${effective} ${choice}`)
}

/** Applies the stored choice now and follows the system's setting while the choice is "system". */
export function startTheme(): void {
  applyTheme()
  dark().addEventListener('change', () => applyTheme())
}

export function ThemeSwitch() {
  const id = useId()
  const [choice, setChoice] = useState<ThemeChoice>(themeChoice)
  useEffect(() => {
    if (choice === 'system') localStorage.removeItem(KEY)
    else localStorage.setItem(KEY, choice)
    applyTheme(choice)
  }, [choice])
  return (
    <span className="theme-switch">
      <label htmlFor={id}>{t('theme.label')}</label>
      <select id={id} value={choice} onChange={(e) => setChoice(e.target.value as ThemeChoice)}>
        <option value="system">{t('theme.system')}</option>
        <option value="light">{t('theme.light')}</option>
        <option value="dark">{t('theme.dark')}</option>
      </select>
    </span>
  )
}
